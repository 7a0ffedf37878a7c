/**
 * The field rules both approval endpoints share, as a table: each field missing, and each
 * value that must be refused (400 naming the field) or accepted at a boundary.
 */
export const COMMON_FIELDS = ['title', 'message', 'successRedirectUrl', 'cancelRedirectUrl', 'referenceNumber', 'method'] as const

export const INVALID_VALUES: { field: string; value: unknown; why: string }[] = [
  { field: 'title', value: '', why: 'empty' },
  { field: 'title', value: 'x'.repeat(256), why: '256 characters' },
  { field: 'title', value: 'two\nlines', why: 'a line break' },
  { field: 'title', value: 42, why: 'a number' },
  { field: 'title', value: null, why: 'null' },
  { field: 'message', value: '', why: 'empty' },
  { field: 'message', value: 'm'.repeat(2001), why: '2001 characters' },
  { field: 'message', value: 'bell\u0007', why: 'a control character' },
  { field: 'message', value: ['text'], why: 'an array' },
  { field: 'referenceNumber', value: '', why: 'empty' },
  { field: 'referenceNumber', value: 'r'.repeat(256), why: '256 characters' },
  { field: 'referenceNumber', value: 'a\tb', why: 'a tab' },
  { field: 'referenceNumber', value: 123, why: 'a number' },
  { field: 'method', value: 'SIGN', why: 'wrong case' },
  { field: 'method', value: 'email', why: 'not sign|event' },
  { field: 'method', value: '', why: 'empty' },
  { field: 'method', value: true, why: 'a boolean' },
  ...(['successRedirectUrl', 'cancelRedirectUrl'] as const).flatMap((field) => [
    { field, value: '', why: 'empty' },
    { field, value: 'vendor.example/ok', why: 'no scheme' },
    { field, value: 'ftp://vendor.example/ok', why: 'ftp scheme' },
    { field, value: 'javascript:alert(1)', why: 'javascript: URL' },
    { field, value: 'https://vendor.example/a b', why: 'white space' },
    { field, value: ' https://vendor.example/', why: 'leading space' },
    { field, value: `https://vendor.example/${'p'.repeat(256 - 23)}`, why: '256 characters' },
    { field, value: { href: 'https://vendor.example' }, why: 'an object' },
  ]),
]

/** Values at the edge of the rules that must be accepted. */
export const VALID_EDGES: { field: string; value: string; why: string }[] = [
  { field: 'title', value: 't'.repeat(255), why: '255 characters' },
  { field: 'title', value: 'Ünïcödé ✓ 🚀', why: 'unicode' },
  { field: 'message', value: 'm'.repeat(2000), why: '2000 characters' },
  { field: 'message', value: 'line one\nline two\r\n\ttabbed', why: 'line breaks and tabs' },
  { field: 'referenceNumber', value: 'r'.repeat(255), why: '255 characters' },
  { field: 'successRedirectUrl', value: `https://vendor.example/${'p'.repeat(255 - 23)}`, why: '255 characters' },
  { field: 'cancelRedirectUrl', value: 'http://localhost:3000/cancel?x=1#frag', why: 'plain http with query and fragment' },
  { field: 'method', value: 'event', why: 'event' },
]
