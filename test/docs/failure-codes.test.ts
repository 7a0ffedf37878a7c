/**
 * docs/failure-codes.md is generated from the typed lists (src/errors.ts ERROR_CODES,
 * src/contract/failure-codes.ts): a code added, removed or reworded there without the doc fails
 * here. Regenerate with `UPDATE_DOCS=1 node --test test/docs/failure-codes.test.ts`.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { test } from 'node:test'
import { APPROVAL_FAILURES, CALL_FAILURES } from '../../src/contract/failure-codes.ts'
import { ERROR_CODES } from '../../src/errors.ts'

const DOC = new URL('../../docs/failure-codes.md', import.meta.url)

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n')
}

function render(): string {
  return [
    '# Failure codes',
    '',
    '<!-- Generated from src/errors.ts and src/contract/failure-codes.ts by test/docs/failure-codes.test.ts: edit those, then run',
    '     UPDATE_DOCS=1 node --test test/docs/failure-codes.test.ts -->',
    '',
    '## Errors (every endpoint)',
    '',
    'The one error shape `{ success: false, code, error, message, field?, requestId }`, with its HTTP status.',
    '',
    table(['code', 'status', 'meaning'], Object.entries(ERROR_CODES).map(([code, e]) =>
      [`\`${code}\``, 'http' in e ? 'CLI only' : String(e.status), e.meaning])),
    '',
    '## Approval verdicts',
    '',
    '`verify_signature`, `verify_transaction` and `approval-cancel` answer a well-formed request that fails with',
    '**200** `{ success: false, code, error }`:',
    '',
    table(['code', 'meaning'], Object.entries(APPROVAL_FAILURES).map(([code, meaning]) => [`\`${code}\``, meaning])),
    '',
    '## Call verification',
    '',
    '`call-signature-verification` answers **200** `{ success: false }`; with `debug: true`, `debug.reason` starts with the code',
    'of the first failing step (also in `kns passport verify`):',
    '',
    table(['code', 'meaning'], Object.entries(CALL_FAILURES).map(([code, meaning]) => [`\`${code}\``, meaning])),
    '',
  ].join('\n')
}

test('docs/failure-codes.md is generated from the typed code lists', () => {
  const rendered = render()
  if (process.env.UPDATE_DOCS === '1') writeFileSync(DOC, rendered)
  assert.equal(readFileSync(DOC, 'utf8'), rendered, 'the code lists changed: run UPDATE_DOCS=1 node --test test/docs/failure-codes.test.ts and commit docs/failure-codes.md')
})
