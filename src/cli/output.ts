import { KnsError, ValidationError } from '../errors.ts'

/** Thrown for wrong command-line words: exit code 2 and the usage text. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

export interface Output {
  json: boolean
  /** Prints the command's result: one JSON object with --json, readable lines otherwise. */
  result(data: Record<string, unknown>, text: string): void
  /** Readable progress or notes: stderr under --json so stdout stays one JSON object. */
  note(text: string): void
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result(data, text) {
      process.stdout.write(json ? `${JSON.stringify(data)}\n` : `${text}\n`)
    },
    note(text) {
      ;(json ? process.stderr : process.stdout).write(`${text}\n`)
    },
  }
}

/**
 * Errors go to stderr; JSON callers get `{ error: { code, message } }` there too. Exit code 2
 * for what the caller typed wrong (usage, or a value that is not valid: INVALID_REQUEST), 1 for
 * everything else (not found, conflict, the database or the ledger unavailable, ...).
 */
export function reportError(err: unknown, json: boolean): number {
  const usage = err instanceof UsageError || err instanceof ValidationError
  const code = err instanceof UsageError ? 'USAGE' : err instanceof KnsError ? err.code : 'INTERNAL'
  const message = err instanceof Error ? err.message : String(err)
  if (json) process.stderr.write(`${JSON.stringify({ error: { code, message } })}\n`)
  else process.stderr.write(`kns: ${message}\n${err instanceof UsageError ? "Run 'kns help' (or 'kns <command> --help') for usage.\n" : ''}`)
  if (!usage && !(err instanceof KnsError) && process.env.KNS_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`)
  return usage ? 2 : 1
}
