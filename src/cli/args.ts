import { parseArgs, type ParseArgsConfig } from 'node:util'
import { UsageError } from './output.ts'

type Options = NonNullable<ParseArgsConfig['options']>

export interface Parsed {
  values: Record<string, string | boolean | undefined>
  positionals: string[]
}

/** parseArgs that turns its errors into UsageError; every command accepts --json. */
export function parse(argv: string[], options: Options = {}): Parsed {
  try {
    const { values, positionals } = parseArgs({ args: argv, options: { ...options, json: { type: 'boolean' } }, allowPositionals: true, strict: true })
    return { values: values as Parsed['values'], positionals }
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

export function required(values: Parsed['values'], name: string): string {
  const value = values[name]
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`)
  return value
}

export function optional(values: Parsed['values'], name: string): string | undefined {
  const value = values[name]
  return typeof value === 'string' ? value : undefined
}
