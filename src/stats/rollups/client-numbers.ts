/**
 * Client hashes numbered 0, 1, 2, ... in order of first appearance, for the bulk import:
 * the per-client state of a week and of the import (hours, last active hour) then lives in
 * arrays indexed by number instead of maps keyed by 16-character strings, whose lookups
 * dominated a 10-million-session import once the clients no longer fit in the CPU caches.
 */
import { withLength } from '../../lib/typed-arrays.ts'

/** base64url characters in ascending code order: a hash's first characters as a number that sorts the same way. */
const ALPHABET = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz'
const DIGIT = new Int8Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) DIGIT[ALPHABET.charCodeAt(i)] = i
/** Characters in a sort key: 8 x 6 bits, exact in a double. */
const KEY_CHARS = 8

/**
 * A number that orders like the string's first KEY_CHARS characters (code-unit order, as
 * SQLite's BINARY and PostgreSQL's "C" collation compare ASCII), or NaN when a character is
 * not base64url (such hashes are compared as strings).
 */
function sortKey(hash: string): number {
  let key = 0
  for (let i = 0; i < KEY_CHARS; i++) {
    // A shorter string sorts before any longer one it prefixes: missing characters count below '-'.
    const digit = i < hash.length ? DIGIT[hash.charCodeAt(i)] ?? -1 : -1
    if (i < hash.length && digit < 0) return NaN
    key = key * 65 + digit + 1
  }
  return key
}

export class ClientNumbers {
  readonly #numbers = new Map<string, number>()
  /** The hash of each number. */
  readonly hashes: string[] = []
  #keys = new Float64Array(1024)

  get size(): number {
    return this.hashes.length
  }

  /** The hash's number, given now if it has none. */
  numberOf(hash: string): number {
    let n = this.#numbers.get(hash)
    if (n === undefined) {
      n = this.hashes.length
      this.#numbers.set(hash, n)
      this.hashes.push(hash)
      this.#keys = withLength(this.#keys, n + 1)
      this.#keys[n] = sortKey(hash)
    }
    return n
  }

  /** Orders numbers as their hashes sort (for Array/TypedArray sort). */
  readonly compare = (a: number, b: number): number => {
    const ka = this.#keys[a]!
    const kb = this.#keys[b]!
    if (ka < kb) return -1
    if (ka > kb) return 1
    // Same first characters, or a key that is NaN: the strings decide.
    const ha = this.hashes[a]!
    const hb = this.hashes[b]!
    return ha < hb ? -1 : ha > hb ? 1 : 0
  }
}
