import { parsePhoneNumberFromString } from 'libphonenumber-js/max'
import { E164_PATTERN } from '../contract/text.ts'

/** The contract's E.164 pattern (the leading `+` is optional on input). */
const E164 = new RegExp(E164_PATTERN)

export function isE164(value: string): boolean {
  return E164.test(value)
}

/** Canonical stored form: `+` and the digits. Callers validate with the schema first. */
export function canonicalPhone(value: string): string {
  return value.startsWith('+') ? value : `+${value}`
}

/** ISO 3166-1 alpha-2 country of a number, or null when it belongs to no single country. */
export function phoneCountry(canonical: string): string | null {
  return parsePhoneNumberFromString(canonical)?.country ?? null
}

/** `+1 *** *** 1234`: enough for a person to recognise their number, not enough to leak it. */
export function maskPhone(canonical: string): string {
  const parsed = parsePhoneNumberFromString(canonical)
  const digits = canonical.replace(/^\+/, '')
  const cc = parsed?.countryCallingCode ?? digits.slice(0, 1)
  const national = digits.slice(cc.length)
  const tail = national.slice(-4)
  const hidden = national.slice(0, -4).replace(/\d/g, '*').replace(/(\*{3})(?=\*)/g, '$1 ')
  return `+${cc} ${hidden} ${tail}`.replace(/\s+/g, ' ')
}
