import { E164_PATTERN } from '../../src/contract/text.ts'

/**
 * What people type, as the API wants it: `+44 (0)7700-900 123` -> `+447700900123`, `0044 ...`
 * -> `+44...`. Null when it is not a number in international form (a national number cannot be
 * told apart from another country's: the page asks for the country code instead of guessing).
 */
export function normalizePhone(typed: string): string | null {
  const compact = typed.replace(/\(0\)/g, '').replace(/[\s().\-\u00a0]/g, '').replace(/^00/, '+')
  return compact.startsWith('+') && new RegExp(E164_PATTERN).test(compact) ? compact : null
}
