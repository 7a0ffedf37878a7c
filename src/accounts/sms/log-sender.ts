import { checkSmsMessage, senderClosed, type SmsLogger, type SmsMessage, type SmsSender } from './sms-sender.ts'

/**
 * SMS_DELIVERY=log, the development default: nothing is sent; the message goes to the log, as
 * a warning so that it shows at the default level. The one place a login code is logged, on
 * purpose: a developer reads it there. Never for production.
 */
export class LogSmsSender implements SmsSender {
  readonly kind = 'log'
  readonly #logger: Pick<SmsLogger, 'warn'>
  #closed = false

  constructor(logger: Pick<SmsLogger, 'warn'>) {
    this.#logger = logger
  }

  async send(message: SmsMessage): Promise<void> {
    checkSmsMessage(message)
    if (this.#closed) throw senderClosed()
    this.#logger.warn({ sms: { to: message.to, text: message.text } }, `SMS not sent (SMS_DELIVERY=log) to ${message.to}: ${message.text}`)
  }

  async close(): Promise<void> {
    this.#closed = true
  }
}
