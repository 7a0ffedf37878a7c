import { KnsError } from '../errors.ts'

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

/** Errors go to stderr; JSON callers get `{ error: { code, message } }` there too. */
export function reportError(err: unknown, json: boolean): number {
  const usage = err instanceof UsageError
  const code = usage ? 'USAGE' : err instanceof KnsError ? err.code : 'INTERNAL'
  const message = err instanceof Error ? err.message : String(err)
  if (json) process.stderr.write(`${JSON.stringify({ error: { code, message } })}\n`)
  else process.stderr.write(`kns: ${message}\n${usage ? "Run 'kns help' for usage.\n" : ''}`)
  if (!usage && !(err instanceof KnsError) && process.env.KNS_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`)
  return usage ? 2 : 1
}
