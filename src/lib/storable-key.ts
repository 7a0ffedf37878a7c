/**
 * True when `text` can be sent to either database as a key and come back the same: no NUL
 * (PostgreSQL rejects it in text) and no lone surrogate (stored as U+FFFD). A key failing
 * this cannot equal any stored key, all of which passed the schemas (src/contract/text.ts).
 */
export function isStorableKey(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed()
}
