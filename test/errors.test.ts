/** Every error class carries a code of ERROR_CODES with the status the list gives it. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import * as errors from '../src/errors.ts'

test('each error class: its code is listed, with the same HTTP status', () => {
  type ErrorClass = new (message: string, extra?: never) => errors.KnsError
  const classes = (Object.values(errors) as unknown[]).filter((value) =>
    typeof value === 'function' && (value as { prototype: unknown }).prototype instanceof errors.KnsError) as ErrorClass[]
  assert.ok(classes.length >= 15, `found ${classes.length} error classes`)
  for (const ErrorClass of classes) {
    const err = new ErrorClass('x', [] as never)
    const listed = errors.ERROR_CODES[err.code]
    assert.ok(listed !== undefined, `${ErrorClass.name}: ${err.code} is not in ERROR_CODES`)
    if (!('http' in listed)) assert.equal(err.status, listed.status, `${ErrorClass.name} (${err.code})`)
  }
})
