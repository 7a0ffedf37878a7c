import { describeOutboundFailure, outboundRequest } from '../../lib/outbound-http.ts'
import { checkSmsMessage, senderClosed, SmsDeliveryError, type SmsFailure, type SmsMessage, type SmsSender } from './sms-sender.ts'

export interface HttpSmsSenderOptions {
  /**
   * The gateway's URL with its fixed parameters, e.g. Kannel's
   * `http://kannel:13013/cgi-bin/sendsms?username=kns&password=secret&from=KNS`; `to` and
   * `text` are added per message. `user:password@` in it goes as HTTP Basic authentication.
   */
  url: string
  /** GET with the parameters in the query (Kannel), or POST them as a form. Default GET. */
  method?: 'GET' | 'POST'
  /** Sets `from` (the sender ID), replacing the URL's. */
  from?: string
  /** Deadline of the whole exchange. Default 10 s. */
  timeoutMs?: number
}

/** Bytes of the answer read: enough for Kannel's "0: Accepted for delivery" or an error line. */
const MAX_ANSWER_BYTES = 4096

/** Answers worth trying again later, and how to call them. */
const RETRYABLE: ReadonlyMap<number, SmsFailure> = new Map([[408, 'timeout'], [429, 'throttled'], [502, 'network'], [503, 'throttled'], [504, 'timeout']])

/**
 * An HTTP SMS gateway: one request per message; any 2xx is "accepted" (Kannel: 202 "0:
 * Accepted for delivery", 202 "3: Queued for later delivery"). The URL is the operator's
 * (configuration, not a caller), so the SSRF rules of outbound-http.ts are lifted (any
 * address, http allowed) but its deadline, body cap and "no redirect followed" stay. The URL
 * carries a password: errors name the gateway's host only, and quote its answer scrubbed.
 */
export class HttpSmsSender implements SmsSender {
  readonly kind = 'http'
  readonly #url: URL
  readonly #headers: Record<string, string> = {}
  readonly #method: 'GET' | 'POST'
  readonly #timeoutMs: number
  /** Values never to quote from an answer: every fixed parameter and credential of the URL. */
  readonly #secrets: string[]
  #closed = false

  /** Throws (a plain Error, without the URL) when the URL is not an absolute http(s) URL. */
  constructor(options: HttpSmsSenderOptions) {
    let url: URL
    try {
      url = new URL(options.url)
    } catch {
      throw new Error('not an absolute URL')
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('the scheme must be http:// or https://')
    this.#secrets = [...url.searchParams.values(), decodeURIComponent(url.username), decodeURIComponent(url.password)].filter((v) => v.length >= 3)
    if (url.username !== '' || url.password !== '') {
      const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`
      this.#headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`
      url.username = url.password = ''
    }
    if (options.from !== undefined && options.from !== '') url.searchParams.set('from', options.from)
    this.#url = url
    this.#method = options.method ?? 'GET'
    this.#timeoutMs = options.timeoutMs ?? 10_000
  }

  async send(message: SmsMessage): Promise<void> {
    checkSmsMessage(message)
    if (this.#closed) throw senderClosed()
    const url = new URL(this.#url)
    let body: string | undefined
    const headers = { ...this.#headers }
    if (this.#method === 'GET') {
      url.searchParams.set('to', message.to)
      url.searchParams.set('text', message.text)
    } else {
      body = new URLSearchParams({ to: message.to, text: message.text }).toString()
      headers['content-type'] = 'application/x-www-form-urlencoded'
    }
    const gateway = `the SMS gateway ${url.host}`
    let response
    try {
      response = await outboundRequest(url.href, { method: this.#method, headers, purpose: 'sms', ...(body === undefined ? {} : { body }) },
        { allowPrivate: true, allowHttp: true, maxRedirects: 0, timeoutMs: this.#timeoutMs, maxResponseBytes: MAX_ANSWER_BYTES })
    } catch (error) {
      const timeout = error instanceof Error && error.name === 'TimeoutError'
      throw new SmsDeliveryError(`${gateway} did not answer: ${describeOutboundFailure(error)}`, { retryable: true, reason: timeout ? 'timeout' : 'network' })
    }
    const status = response.status
    if (status >= 200 && status < 300) return
    const answer = scrub(response.body.toString('utf8'), [...this.#secrets, message.text, message.to])
    const retry = RETRYABLE.get(status)
    const reason: SmsFailure = retry ?? (status < 400 || status === 401 || status === 403 ? 'refused' : 'rejected')
    const what = status >= 300 && status < 400 ? ' (a redirect, not followed)' : ''
    throw new SmsDeliveryError(`${gateway} answered ${status}${what}${answer === '' ? '' : `: ${answer}`}`, { retryable: retry !== undefined, reason })
  }

  async close(): Promise<void> {
    this.#closed = true
  }
}

/**
 * The first line of an answer, fit to put in an error: at most 100 characters, without any of
 * `secrets` (as sent or URL-encoded), and every run of 4 or more digits masked, in case the
 * gateway echoes part of the text (the code) or a number.
 */
function scrub(answer: string, secrets: string[]): string {
  let text = answer
  for (const secret of secrets) {
    for (const form of new Set([secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)])) {
      text = text.split(form).join('[redacted]')
    }
  }
  // One printable line: the first, without control characters.
  const line = (text.split(/\r?\n/, 1)[0] ?? '').replace(/[0-9]{4,}/g, '####').replace(/[\x00-\x1f\x7f]/g, ' ').trim()
  return line.length > 100 ? `${line.slice(0, 100)}...` : line
}
