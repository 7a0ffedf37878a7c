import smpp, { type PDU, type Session } from 'smpp'
import { inSpan } from '../../lib/tracing.ts'
import { InFlightLimit, timeoutFailure, withDeadline } from './limits.ts'
import { checkSmsMessage, senderClosed, SmsDeliveryError, type SmsLogger, type SmsMessage, type SmsSender } from './sms-sender.ts'
import { parseSmppUrl, sourceAddress, statusName, textParameters, where, type SmppEndpoint, type SourceAddress } from './smpp-options.ts'

export interface SmppSenderOptions {
  /** `smpp://system_id:password@host:port` (`ssmpp://` for TLS); see parseSmppUrl. */
  url: string
  /** system_type of the bind, if the SMSC wants one. */
  systemType?: string
  /** Sender ID (source_addr): `+number`, short code or alphanumeric; see sourceAddress. */
  from?: string
  /** Deadline of one send: a free slot, the bind if needed, and the submit_sm_resp. Default 10 s. */
  timeoutMs?: number
  /** Deadline of a bind (connect included), and of an enquire_link or unbind answer. Default 10 s. */
  bindTimeoutMs?: number
  /** An enquire_link this often while bound; no answer in time drops the session. Default 30 s. */
  enquireLinkMs?: number
  /** submit_sm awaiting their answer at once (the session window). Default 10. */
  maxInFlight?: number
  logger?: SmsLogger
}

/** A bound session and the submits waiting on it (failed at once if it drops). */
interface Link {
  session: Session
  pending: Set<(error?: Error) => void>
  keepAlive?: NodeJS.Timeout
}

/** The SMSC's answer to a submit_sm that is worth sending again later. */
const RETRYABLE = new Set([smpp.errors.ESME_RTHROTTLED, smpp.errors.ESME_RMSGQFUL])
/** Bind refusals that no retry cures: the configuration is wrong. */
const BAD_CREDENTIALS = new Set([smpp.errors.ESME_RINVPASWD, smpp.errors.ESME_RINVSYSID, smpp.errors.ESME_RINVSYSTYP])

const lost = (what: string) => new SmsDeliveryError(what, { retryable: true, reason: 'network' })

/**
 * SMPP 3.4 to the operator's SMSC over one persistent session, bound on the first send (not
 * at start: the service runs while the SMSC is away) and again on the first send after it
 * drops. The smpp package neither reconnects, nor times anything out, nor fails the
 * callbacks of a closed session: the deadlines, the keep-alive and the re-bind are here.
 */
export class SmppSender implements SmsSender {
  readonly kind = 'smpp'
  readonly #endpoint: SmppEndpoint
  readonly #source: SourceAddress
  readonly #systemType: string
  readonly #timeoutMs: number
  readonly #bindTimeoutMs: number
  readonly #enquireLinkMs: number
  readonly #limit: InFlightLimit
  readonly #logger: SmsLogger | undefined
  #link: Link | null = null
  #binding: Promise<Link> | null = null
  #closed = false

  /** Throws (a plain Error naming the problem, never the URL) on a bad URL or sender ID. */
  constructor(options: SmppSenderOptions) {
    this.#endpoint = parseSmppUrl(options.url)
    this.#source = sourceAddress(options.from, this.#endpoint)
    this.#systemType = options.systemType ?? ''
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.#bindTimeoutMs = options.bindTimeoutMs ?? 10_000
    this.#enquireLinkMs = options.enquireLinkMs ?? 30_000
    this.#limit = new InFlightLimit(options.maxInFlight ?? 10)
    this.#logger = options.logger
  }

  /** Whether a session is bound now (for health checks and tests). */
  get bound(): boolean {
    return this.#link !== null
  }

  async send(message: SmsMessage): Promise<void> {
    checkSmsMessage(message)
    if (this.#closed) throw senderClosed()
    const deadline = Date.now() + this.#timeoutMs
    const overdue = (what: string) => () => timeoutFailure(what, this.#timeoutMs)
    const release = await this.#limit.acquire(deadline, overdue('no free SMPP window slot (submits awaiting answers)'))
    try {
      const link = await withDeadline(this.#bound(), deadline, overdue('the SMSC bind did not complete'))
      // With tracing, a client span: the SMSC's host, never the number or the text.
      await inSpan('SMPP submit_sm', { kind: 'client', attributes: { 'rpc.system': 'smpp', 'server.address': this.#endpoint.host } },
        () => this.#submit(link, message, deadline, overdue('no submit_sm_resp from the SMSC')))
    } finally {
      release()
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#limit.failWaiters(senderClosed())
    const link = this.#link ?? await this.#binding?.catch(() => null) ?? null
    if (link === null || link.session.socket.destroyed) return
    await new Promise<void>((resolve) => {
      link.session.socket.once('close', () => { clearTimeout(timer); resolve() })
      // A polite unbind; the socket is ended once it is answered, or destroyed when it is not.
      const timer = setTimeout(() => link.session.destroy(), this.#bindTimeoutMs)
      if (!link.session.send(new smpp.PDU('unbind'), () => link.session.close())) link.session.destroy()
    })
  }

  #bound(): Promise<Link> {
    if (this.#link !== null) return Promise.resolve(this.#link)
    this.#binding ??= this.#bind().finally(() => { this.#binding = null })
    return this.#binding
  }

  #bind(): Promise<Link> {
    const endpoint = this.#endpoint
    return new Promise<Link>((resolve, reject) => {
      const session = smpp.connect({ host: endpoint.host, port: endpoint.port, tls: endpoint.tls })
      const link: Link = { session, pending: new Set() }
      let bound = false
      let settled = false
      let lastError: NodeJS.ErrnoException | undefined
      const fail = (error: SmsDeliveryError) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        session.destroy()
        this.#logger?.warn({ smsc: where(endpoint), reason: error.reason }, `SMPP bind failed: ${error.message}`)
        reject(error)
      }
      const timer = setTimeout(() => fail(timeoutFailure(`no bind answer from the SMSC ${where(endpoint)}`, this.#bindTimeoutMs)), this.#bindTimeoutMs)
      // Without an 'error' listener the package's EventEmitter would throw it (a crash). A
      // socket error is followed by 'close'; a PDU it cannot parse leaves the session stuck.
      session.on('error', (error: NodeJS.ErrnoException) => { lastError = error; session.destroy() })
      session.on('close', () => {
        if (bound) return this.#dropped(link)
        fail(lost(`the SMSC ${where(endpoint)} closed the connection before the bind was answered${lastError?.code ? ` (${lastError.code})` : ''}`))
      })
      answerRequests(session)
      const bind = new smpp.PDU(`bind_${endpoint.bind}`, {
        system_id: endpoint.systemId, password: endpoint.password, system_type: this.#systemType,
        interface_version: 0x34, // the package says 5.0 (0x50) by default
      })
      const sent = session.send(bind, (response) => {
        if (settled) return
        if (response.command_status !== 0) {
          const credentials = BAD_CREDENTIALS.has(response.command_status)
          return fail(new SmsDeliveryError(`the SMSC ${where(endpoint)} refused the bind: ${statusName(response.command_status)}`,
            { retryable: !credentials, reason: 'refused' }))
        }
        settled = bound = true
        clearTimeout(timer)
        if (this.#closed) {
          session.destroy()
          return reject(senderClosed())
        }
        this.#link = link
        this.#keepAlive(link)
        this.#logger?.info({ smsc: where(endpoint), bind: endpoint.bind }, 'SMPP session bound')
        resolve(link)
      })
      if (!sent) fail(lost(`cannot write to the SMSC ${where(endpoint)}`))
    })
  }

  #submit(link: Link, message: SmsMessage, deadline: number, overdue: () => Error): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        if (!link.pending.delete(settle)) return
        clearTimeout(timer)
        if (error === undefined) resolve()
        else reject(error)
      }
      link.pending.add(settle)
      const timer = setTimeout(() => settle(overdue()), Math.max(0, deadline - Date.now()))
      const pdu = new smpp.PDU('submit_sm', {
        ...this.#source,
        dest_addr_ton: 1, dest_addr_npi: 1, destination_addr: message.to.slice(1), // E.164: international, ISDN
        ...textParameters(message.text),
      })
      const sent = link.session.send(pdu, (response: PDU) => {
        const status = response.command_status
        if (status === 0) return settle()
        const retryable = RETRYABLE.has(status)
        settle(new SmsDeliveryError(`the SMSC refused the message: ${statusName(status)}`, { retryable, reason: retryable ? 'throttled' : 'rejected' }))
      })
      if (!sent) settle(lost('the SMPP connection is closed'))
    })
  }

  /** enquire_link every enquireLinkMs; a link that does not answer one in time is dropped. */
  #keepAlive(link: Link): void {
    link.keepAlive = setInterval(() => {
      const silent = setTimeout(() => {
        this.#logger?.warn({ smsc: where(this.#endpoint) }, 'SMPP enquire_link not answered: dropping the session')
        link.session.destroy()
      }, this.#bindTimeoutMs).unref()
      if (!link.session.send(new smpp.PDU('enquire_link'), () => clearTimeout(silent))) link.session.destroy()
    }, this.#enquireLinkMs).unref()
  }

  #dropped(link: Link): void {
    clearInterval(link.keepAlive)
    if (this.#link === link) this.#link = null
    if (!this.#closed) this.#logger?.warn({ smsc: where(this.#endpoint) }, 'SMPP session closed; the next send binds again')
    for (const settle of [...link.pending]) settle(lost('the SMPP connection closed before the SMSC answered'))
  }
}

/** What the SMSC may ask of us: answered, or the SMSC would drop the session or resend. */
function answerRequests(session: Session): void {
  for (const command of ['enquire_link', 'deliver_sm', 'data_sm', 'unknown']) {
    session.on(command, (pdu: PDU) => session.send(pdu.response()))
  }
  session.on('unbind', (pdu: PDU) => { session.send(pdu.response()); session.close() })
}
