/**
 * What text the service accepts, in one place. Every string that reaches the database or a
 * signed message is well-formed Unicode (no lone surrogates: PostgreSQL and SQLite would both
 * store U+FFFD instead, so the value read back would differ from the one sent) and free of
 * the characters that hide or reorder what a person reads: C0 and C1 controls, DEL, the
 * line and paragraph separators, and the bidirectional embeddings, overrides and isolates
 * (U+202A-U+202E, U+2066-U+2069; the "Trojan Source" characters). The left-to-right and
 * right-to-left marks (U+200E, U+200F) stay allowed: right-to-left names need them.
 *
 * The patterns are JSON-schema `pattern`s, compiled with the `u` flag by both validators
 * (Fastify's Ajv and TypeBox), where `[\ud800-\udfff]` matches only a lone surrogate.
 */

/** E.164: a + (optional on input), then up to 15 digits, the first not 0. */
export const E164_PATTERN = '^\\+?[1-9]\\d{5,14}$'

const FORBIDDEN_ALWAYS = '\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069\\ud800-\\udfff\\ufffe\\uffff'

/** One line of text: a title, a name, a reference. No control character at all. */
export const SINGLE_LINE = `^[^\\u0000-\\u001f${FORBIDDEN_ALWAYS}]*$`

/** Free text: line breaks (\n, \r) and tabs allowed, no other control character. */
export const MULTI_LINE = `^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f${FORBIDDEN_ALWAYS}]*$`

/** A character of an e-mail address: not white space, not `@`, nothing SINGLE_LINE forbids. */
const EMAIL_CHAR = `[^\\s@\\u0000-\\u001f${FORBIDDEN_ALWAYS}]`

/**
 * `local@domain.tld`: the local part at most 64 characters (RFC 5321), internationalised
 * addresses (RFC 6531) allowed, so letters of any script are; the whole bounded by the schema.
 */
export const EMAIL = `^${EMAIL_CHAR}{1,64}@${EMAIL_CHAR}+\\.${EMAIL_CHAR}+$`

/** An http(s) URL as the contract writes it (`^https?://`), with no white space or control character. */
export const HTTP_URL = `^https?:\\/\\/${EMAIL_CHAR.replace('@', '')}*$`

/** An operator's own ID of a reported SIM or device change (what makes reports idempotent). */
export const CHANGE_EVENT_ID = '^[A-Za-z0-9._:-]{1,128}$'

/**
 * RFC 3339 date-time with its zone (`Z` or `+hh:mm`), seconds required, fractions allowed: the
 * `date-time` of the SIM change records (the CAMARA APIs that answer from them speak RFC 3339).
 */
export const RFC3339_DATE_TIME = '^\\d{4}-\\d{2}-\\d{2}[Tt]\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{1,9})?(?:[Zz]|[+-]\\d{2}:\\d{2})$'

/** What each pattern asks, in words, for error messages (a regular expression is no answer for a person). */
/** A whole number of seconds from 0 to 60 (transaction_details `wait`). */
export const WAIT_SECONDS = '^(?:[0-9]|[1-5][0-9]|60)$'

export const PATTERN_WORDS: Record<string, string> = {
  [WAIT_SECONDS]: 'must be a whole number of seconds from 0 to 60',
  [SINGLE_LINE]: 'must be one line of text without control or bidirectional-override characters',
  [MULTI_LINE]: 'must be text without control characters other than line breaks and tabs, and without bidirectional overrides',
  [EMAIL]: 'must be an e-mail address (local@domain.tld) without white space or control characters',
  [HTTP_URL]: 'must be an http:// or https:// URL without white space or control characters',
  [CHANGE_EVENT_ID]: 'must be 1-128 letters, digits and . _ : -',
  [RFC3339_DATE_TIME]: 'must be an RFC 3339 date-time with a time zone, e.g. 2026-11-27T08:15:00Z',
}
