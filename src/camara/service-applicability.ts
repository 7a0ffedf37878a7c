import { parsePhoneNumberFromString, type NumberType } from 'libphonenumber-js/max'

/**
 * Number types that never have a SIM of their own: a fixed line, and the service numbers
 * (freephone, premium rate, shared cost, universal access, voicemail access). SIM Swap and
 * Device Swap do not apply to them (422 SERVICE_NOT_APPLICABLE). A number whose type cannot be
 * told apart from a mobile one (FIXED_LINE_OR_MOBILE, as in North America), a mobile, VoIP,
 * personal or pager number, and any number libphonenumber-js cannot type, are answered.
 */
const WITHOUT_SIM: ReadonlySet<NumberType> = new Set<NumberType>(['FIXED_LINE', 'TOLL_FREE', 'PREMIUM_RATE', 'SHARED_COST', 'UAN', 'VOICEMAIL'])

/** Typing a number with the full metadata costs some 20 µs, most of a check: a bank asks of the same numbers again and again. */
const MEMO_MAX = 10_000
const memo = new Map<string, boolean>()

/** Whether SIM Swap and Device Swap can say anything of `phone` (E.164 with its `+`). */
export function swapServiceApplies(phone: string): boolean {
  let applies = memo.get(phone)
  if (applies === undefined) {
    const type = parsePhoneNumberFromString(phone)?.getType()
    applies = type === undefined || !WITHOUT_SIM.has(type)
    // Forgetting all at once is enough: a full memo is a flood of distinct numbers, which pays the parse anyway.
    if (memo.size >= MEMO_MAX) memo.clear()
    memo.set(phone, applies)
  }
  return applies
}
