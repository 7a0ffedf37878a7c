/**
 * Sending one SMS (a login code) to a phone number. Three ways, chosen by SMS_DELIVERY
 * (create-sms-sender.ts): `log` (development: the message is logged, not sent), `smpp` (SMPP
 * 3.4 straight to the operator's SMSC) and `http` (an HTTP SMS gateway such as Kannel).
 *
 * The text carries a one-time code, so no error message, and no log line but the `log`
 * sender's, ever contains it; nor any credential of the gateway.
 */

export interface SmsMessage {
  /** E.164 with its `+`, e.g. `+46701234567`. */
  to: string
  text: string
}

export interface SmsSender {
  readonly kind: 'log' | 'smpp' | 'http'
  /** Resolves once the SMSC or gateway has accepted the message; rejects with SmsDeliveryError. */
  send(message: SmsMessage): Promise<void>
  /** Releases the connection (SMPP: unbinds); later sends reject. */
  close(): Promise<void>
}

/** The part of a pino logger the senders use. */
export interface SmsLogger {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

/**
 * Why a delivery failed:
 * - `timeout`: no answer within the deadline (the message may still have gone out);
 * - `network`: the SMSC or gateway could not be reached, or the connection dropped;
 * - `refused`: the SMSC refused our bind (credentials, system type) or the gateway our request;
 * - `throttled`: the SMSC or gateway is over its rate or queue: later;
 * - `rejected`: this message was refused (bad number, bad text);
 * - `closed`: the sender was closed.
 */
export type SmsFailure = 'timeout' | 'network' | 'refused' | 'throttled' | 'rejected' | 'closed'

/**
 * A message was not accepted. `retryable`: sending it again later may work (throttling, a
 * timeout, a network fault, a 503); otherwise the configuration or the message is wrong.
 * The message never contains the SMS text or a credential.
 */
export class SmsDeliveryError extends Error {
  readonly code = 'SMS_DELIVERY_FAILED'
  readonly retryable: boolean
  readonly reason: SmsFailure

  constructor(message: string, options: { retryable: boolean; reason: SmsFailure; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'SmsDeliveryError'
    this.retryable = options.retryable
    this.reason = options.reason
  }
}

/** A send on a closed sender. */
export function senderClosed(): SmsDeliveryError {
  return new SmsDeliveryError('the SMS sender is closed', { retryable: false, reason: 'closed' })
}

const E164 = /^\+[1-9][0-9]{1,14}$/

/** Refuses a message no sender can deliver: a number not in E.164, an empty text. */
export function checkSmsMessage(message: SmsMessage): void {
  if (!E164.test(message.to)) throw new SmsDeliveryError('the number is not E.164 (+ and up to 15 digits)', { retryable: false, reason: 'rejected' })
  if (message.text.length === 0) throw new SmsDeliveryError('the text is empty', { retryable: false, reason: 'rejected' })
}
