import { parsePhoneNumberFromString, type NumberType } from 'libphonenumber-js/max'

/**
 * Number types that never have a SIM of their own: a fixed line, and the service numbers
 * (freephone, premium rate, shared cost, universal access, voicemail access). SIM Swap and
 * Device Swap do not apply to them (422 SERVICE_NOT_APPLICABLE). A number whose type cannot be
 * told apart from a mobile one (FIXED_LINE_OR_MOBILE, as in North America), a mobile, VoIP,
 * personal or pager number, and any number libphonenumber-js cannot type, are answered.
 */
const WITHOUT_SIM: ReadonlySet<NumberType> = new Set<NumberType>(['FIXED_LINE', 'TOLL_FREE', 'PREMIUM_RATE', 'SHARED_COST', 'UAN', 'VOICEMAIL'])

/** Whether SIM Swap and Device Swap can say anything of `phone` (E.164 with its `+`). */
export function swapServiceApplies(phone: string): boolean {
  const type = parsePhoneNumberFromString(phone)?.getType()
  return type === undefined || !WITHOUT_SIM.has(type)
}
