/**
 * An SBC's side of the SIP redirect interface for the fault tests: INVITEs over UDP from one
 * socket (as an SBC sends them), each retransmitted on RFC 3261's Timer A (0.5 s, doubling)
 * until a final response or a deadline, every non-2xx final response ACKed in its
 * transaction (or the dispatcher would retransmit it until Timer H). sipp runs one scenario per
 * process; a steady mix of many calls over minutes is cheaper from one socket of our own.
 */
import { randomBytes } from 'node:crypto'
import { createSocket, type Socket } from 'node:dgram'

export interface SipAnswer {
  /** The final status; 0 when none came before the deadline. */
  status: number
  /** Header fields of the final response, lower-case names, every value. */
  headers: Map<string, string[]>
  /** INVITEs sent (1 + retransmissions). */
  sent: number
}

export interface InviteRequest {
  /** The called number (the Request-URI's user part). */
  to: string
  from: string
  /** Extra header lines (Identity, Attestation-Info...). */
  headers?: string[]
  /** The call's Call-ID (a fresh one by default): the dispatcher's log names it. */
  callId?: string
}

interface Pending {
  resolve(answer: SipAnswer): void
  /** A provisional answer: retransmissions stop (RFC 3261 17.1.1.2), the deadline stays. */
  provisional(): void
  invite: string
  branch: string
  ack(toHeader: string): string
  sent: number
}

const TIMER_A_MS = 500

export class SipInviteClient {
  readonly #socket: Socket
  readonly #local: { address: string; port: number }
  readonly #target: { address: string; port: number }
  readonly #pending = new Map<string, Pending>()

  private constructor(socket: Socket, target: { address: string; port: number }) {
    this.#socket = socket
    this.#local = socket.address()
    this.#target = target
    socket.on('message', (message) => this.#onMessage(message.toString('utf8')))
  }

  /** A socket bound on `localAddress` (the SBC's address, one the dispatcher trusts), sending to `target` (host:port). */
  static async open(localAddress: string, target: string): Promise<SipInviteClient> {
    const socket = createSocket('udp4')
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject)
      socket.bind(0, localAddress, () => { socket.off('error', reject); resolve() })
    })
    socket.on('error', () => {}) // an ICMP unreachable while the dispatcher restarts: the call times out
    const [address, port] = target.split(':')
    return new SipInviteClient(socket, { address: address!, port: Number(port) })
  }

  /** Sends an INVITE and resolves with its final response, or status 0 after `timeoutMs`. */
  invite(request: InviteRequest, timeoutMs: number): Promise<SipAnswer> {
    const callId = request.callId ?? `mix-${randomBytes(8).toString('hex')}`
    const branch = `z9hG4bK${randomBytes(8).toString('hex')}`
    const tag = randomBytes(4).toString('hex')
    const { address, port } = this.#local
    const target = `${this.#target.address}:${this.#target.port}`
    const uri = `sip:${request.to}@${target};user=phone`
    const via = `Via: SIP/2.0/UDP ${address}:${port};rport;branch=${branch}`
    const from = `From: <sip:${request.from}@${address};user=phone>;tag=${tag}`
    const invite = [
      `INVITE ${uri} SIP/2.0`, via, from, `To: <sip:${request.to}@${target}>`, `Call-ID: ${callId}`, 'CSeq: 1 INVITE',
      `Contact: <sip:sbc@${address}:${port}>`, 'Max-Forwards: 70', ...(request.headers ?? []), 'Content-Length: 0', '', '',
    ].join('\r\n')
    // The ACK of a non-2xx final response: the same Via branch, the response's To (with its tag).
    const ack = (toHeader: string) => [
      `ACK ${uri} SIP/2.0`, via, from, `To: ${toHeader}`, `Call-ID: ${callId}`, 'CSeq: 1 ACK', 'Max-Forwards: 70', 'Content-Length: 0', '', '',
    ].join('\r\n')
    return new Promise<SipAnswer>((resolve) => {
      const started = Date.now()
      let interval = TIMER_A_MS
      let timer: NodeJS.Timeout | undefined
      let proceeding = false
      const pending: Pending = {
        invite, branch, ack, sent: 0,
        resolve: (answer) => {
          clearTimeout(timer)
          this.#pending.delete(callId)
          resolve(answer)
        },
        provisional: () => {
          if (proceeding) return
          proceeding = true
          clearTimeout(timer)
          timer = setTimeout(() => pending.resolve({ status: 0, headers: new Map(), sent: pending.sent }), Math.max(timeoutMs - (Date.now() - started), 1))
        },
      }
      const send = () => {
        if (Date.now() - started >= timeoutMs) {
          pending.resolve({ status: 0, headers: new Map(), sent: pending.sent })
          return
        }
        pending.sent++
        this.#socket.send(invite, this.#target.port, this.#target.address)
        const next = Math.min(interval, timeoutMs - (Date.now() - started))
        interval *= 2
        timer = setTimeout(send, Math.max(next, 1))
      }
      this.#pending.set(callId, pending)
      send()
    })
  }

  close(): void {
    for (const pending of this.#pending.values()) pending.resolve({ status: 0, headers: new Map(), sent: pending.sent })
    this.#socket.close()
  }

  #onMessage(text: string): void {
    const [head] = text.split('\r\n\r\n')
    const lines = (head ?? '').split('\r\n')
    const status = /^SIP\/2\.0 (\d{3})/.exec(lines[0] ?? '')
    if (status === null) return // a request (an OPTIONS keep-alive): not ours to answer
    const headers = new Map<string, string[]>()
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':')
      if (colon <= 0) continue
      const name = line.slice(0, colon).trim().toLowerCase()
      headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()])
    }
    const callId = headers.get('call-id')?.[0] ?? headers.get('i')?.[0]
    const pending = callId === undefined ? undefined : this.#pending.get(callId)
    const code = Number(status[1])
    if (pending === undefined) {
      // A retransmitted final response of a call already answered: ACK it again (RFC 3261 17.1.1.2).
      if (code >= 300 && callId !== undefined) this.#ackLate(headers)
      return
    }
    if (code < 200) {
      pending.provisional()
      return
    }
    if (code >= 300) this.#socket.send(pending.ack(headers.get('to')?.[0] ?? ''), this.#target.port, this.#target.address)
    pending.resolve({ status: code, headers, sent: pending.sent })
  }

  #ackLate(headers: Map<string, string[]>): void {
    const via = headers.get('via')?.[0]
    const cseq = headers.get('cseq')?.[0]
    if (via === undefined || cseq === undefined || !cseq.endsWith('INVITE')) return
    const to = headers.get('to')?.[0] ?? ''
    const uri = /<([^>]+)>/.exec(to)?.[1] ?? ''
    const ack = [
      `ACK ${uri} SIP/2.0`, `Via: ${via}`, `From: ${headers.get('from')?.[0] ?? ''}`, `To: ${to}`, `Call-ID: ${headers.get('call-id')![0]}`,
      `CSeq: ${cseq.split(/\s+/)[0]} ACK`, 'Max-Forwards: 70', 'Content-Length: 0', '', '',
    ].join('\r\n')
    this.#socket.send(ack, this.#target.port, this.#target.address)
  }
}
