import { combinations, Tally } from '../lib/tally.ts'
import { SEND_BUDGETS } from './send-budgets.ts'
import { SmsDeliveryError, type SmsFailure, type SmsSender } from './sms/sms-sender.ts'

/** Why a code was refused at its check (the send's refusals are the budgets of send-budgets.ts). */
export type VerifyRefusal = 'no_code' | 'expired' | 'used' | 'no_tries_left' | 'wrong_code'
const VERIFY_REFUSALS: readonly VerifyRefusal[] = ['no_code', 'expired', 'used', 'no_tries_left', 'wrong_code']

/** Why an SMS was not accepted: SmsFailure, or `other` for an error that is not a delivery error (a bug). */
const SMS_FAILURES: ReadonlyArray<SmsFailure | 'other'> = ['timeout', 'network', 'refused', 'throttled', 'rejected', 'closed', 'other']

/**
 * What the login codes did, for /metrics: codes sent (answered 202, texted or not: a number
 * without an account gets the same answer), verified, refused (by step and reason), and texts
 * accepted or not by the SMSC or gateway (by delivery, and failure reason). Every label value
 * is from a fixed list; the combinations of this process's delivery start at 0.
 */
export class LoginCodeCounts {
  readonly sent = new Tally<never>([], [{}])
  readonly verified = new Tally<never>([], [{}])
  readonly refused = new Tally<'step' | 'reason'>(['step', 'reason'], [
    ...SEND_BUDGETS.map((reason) => ({ step: 'send', reason })),
    ...VERIFY_REFUSALS.map((reason) => ({ step: 'verify', reason })),
  ])
  readonly smsSent: Tally<'delivery'>
  readonly smsFailed: Tally<'delivery' | 'reason'>
  readonly #delivery: SmsSender['kind']

  constructor(delivery: SmsSender['kind']) {
    this.#delivery = delivery
    this.smsSent = new Tally(['delivery'], [{ delivery }])
    this.smsFailed = new Tally(['delivery', 'reason'], combinations({ delivery: [delivery], reason: SMS_FAILURES }))
  }

  refusedAt(step: 'send' | 'verify', reason: string): void {
    this.refused.add({ step, reason })
  }

  smsOutcome(err?: unknown): void {
    if (err === undefined) this.smsSent.add({ delivery: this.#delivery })
    else this.smsFailed.add({ delivery: this.#delivery, reason: err instanceof SmsDeliveryError ? err.reason : 'other' })
  }
}
