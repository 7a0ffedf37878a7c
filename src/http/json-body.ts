import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ValidationError } from '../errors.ts'

/** Deepest nesting of arrays and objects accepted in a JSON body. No request of the API nests past 3. */
export const MAX_JSON_DEPTH = 32

/**
 * Body limits per route, in bytes: each route's is a few times its largest valid body (JSON
 * may escape every character as \uXXXX), so a client cannot make the server buffer and parse
 * megabytes where a kilobyte is expected. Only the statistics admin routes take bulk bodies.
 */
export const BODY_LIMITS = {
  /** A few short fields: registration, lookups, verdicts, statistics ranges. */
  small: 4 * 1024,
  /** Approval requests (a 2000-character message), signatures (up to 16 KiB), PASSporTs. */
  text: 32 * 1024,
} as const

/**
 * True when `text` nests arrays and objects deeper than `max`. A linear scan that skips
 * strings: far cheaper than parsing, and it keeps V8's recursive JSON.parse from spending
 * seconds (on the event loop) on a body of millions of brackets.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/**
 * The JSON body parser of every route: Fastify's own (prototype-poisoning checks included),
 * behind the nesting limit. With `emptyAsObject`, an empty body reads as `{}` (for routes that
 * take no body, whose clients still send a JSON content type).
 */
export function useJsonParser(app: FastifyInstance, options: { emptyAsObject?: boolean } = {}): void {
  const parse = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request: FastifyRequest, body, done) => {
    const text = body as string
    if (options.emptyAsObject === true && text.trim() === '') return done(null, {})
    if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
      return done(new ValidationError(`body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`), undefined)
    }
    parse(request, text, done)
  })
}
