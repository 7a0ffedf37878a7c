import { ConfigError } from '../../errors.ts'
import { HttpSmsSender } from './http-sender.ts'
import { LogSmsSender } from './log-sender.ts'
import { SmppSender } from './smpp-sender.ts'
import type { SmsLogger, SmsSender } from './sms-sender.ts'

/** The SMS settings, as configuration reads them (environment variable in brackets). */
export interface SmsSenderOptions {
  /** SMS_DELIVERY: `log` (development: logged, not sent), `smpp` or `http`. */
  delivery: 'log' | 'smpp' | 'http'
  /** SMPP_URL: `smpp://system_id:password@host:port` or `ssmpp://...` (TLS); options `?bind=transceiver&source_ton=5&source_npi=0`. */
  smppUrl?: string
  /** SMPP_SYSTEM_TYPE: the bind's system_type, if the SMSC wants one (at most 12 characters). */
  smppSystemType?: string
  /** SMS_FROM: the sender ID: `+number`, a short code, or up to 11 letters and digits. */
  smsFrom?: string
  /** SMS_HTTP_URL: the gateway URL with its fixed parameters; `to` and `text` are added. */
  httpUrl?: string
  /** SMS_HTTP_METHOD: `GET` (Kannel, the default) or `POST` (a form). */
  httpMethod?: 'GET' | 'POST'
  /** SMS_TIMEOUT_MS: deadline of one send (and of an SMPP bind). Default 10 000. */
  timeoutMs?: number
}

/**
 * The sender SMS_DELIVERY names, its settings checked first: a missing or bad one throws
 * ConfigError naming its variable (never quoting a URL, which holds a password). Nothing
 * connects here; an SMPP session is bound on the first send.
 */
export function createSmsSender(options: SmsSenderOptions, logger: SmsLogger): SmsSender {
  const timeoutMs = options.timeoutMs ?? 10_000
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new ConfigError(`SMS_TIMEOUT_MS must be a whole number of milliseconds, got ${timeoutMs}`)
  const from = options.smsFrom === '' ? undefined : options.smsFrom
  if (from !== undefined && !/^(\+?[0-9]{1,15}|[A-Za-z0-9 ._-]{1,11})$/.test(from)) {
    throw new ConfigError('SMS_FROM must be +digits, a short code, or at most 11 letters, digits, spaces, dots, dashes or underscores')
  }
  switch (options.delivery) {
    case 'log':
      return new LogSmsSender(logger)
    case 'smpp': {
      if (!options.smppUrl) throw new ConfigError('SMS_DELIVERY=smpp needs SMPP_URL (smpp://system_id:password@host:port)')
      const systemType = options.smppSystemType ?? ''
      if (!/^[ -~]{0,12}$/.test(systemType)) throw new ConfigError('SMPP_SYSTEM_TYPE must be at most 12 printable ASCII characters')
      try {
        return new SmppSender({ url: options.smppUrl, systemType, timeoutMs, bindTimeoutMs: timeoutMs, logger, ...(from === undefined ? {} : { from }) })
      } catch (error) {
        throw new ConfigError(`SMPP_URL: ${(error as Error).message}`)
      }
    }
    case 'http': {
      if (!options.httpUrl) throw new ConfigError('SMS_DELIVERY=http needs SMS_HTTP_URL (e.g. http://kannel:13013/cgi-bin/sendsms?username=...&password=...)')
      const method = options.httpMethod ?? 'GET'
      if (method !== 'GET' && method !== 'POST') throw new ConfigError(`SMS_HTTP_METHOD must be GET or POST, got ${JSON.stringify(method)}`)
      try {
        return new HttpSmsSender({ url: options.httpUrl, method, timeoutMs, ...(from === undefined ? {} : { from }) })
      } catch (error) {
        throw new ConfigError(`SMS_HTTP_URL: ${(error as Error).message}`)
      }
    }
    default:
      throw new ConfigError(`SMS_DELIVERY must be log, smpp or http, got ${JSON.stringify(options.delivery as string)}`)
  }
}
