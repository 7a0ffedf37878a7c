/**
 * A SIP OPTIONS over UDP from a socket of its own (so from a port of its own), as an SBC's
 * keep-alive: what the server answered, whole, or undefined after `timeoutMs`. To 127.0.0.1
 * from 127.0.0.1 unless `host` and `localAddress` say otherwise (a cluster test's addresses).
 */
import { randomBytes } from 'node:crypto'
import { createSocket } from 'node:dgram'

export interface SipOptionsRequest {
  callId?: string
  /** The Via branch: a fresh one by default, so the same Call-ID sent again is a new transaction. */
  branch?: string
  host?: string
  localAddress?: string
  timeoutMs?: number
}

export async function sipOptionsOverUdp(port: number, options: SipOptionsRequest = {}): Promise<string | undefined> {
  const callId = options.callId ?? `options-${Math.random().toString(16).slice(2)}`
  const branch = options.branch ?? `z9hG4bK-options-${randomBytes(6).toString('hex')}`
  const host = options.host ?? '127.0.0.1'
  const local = options.localAddress ?? '127.0.0.1'
  const socket = createSocket('udp4')
  try {
    await new Promise<void>((resolve) => socket.bind(0, local, resolve))
    const answer = new Promise<string>((resolve) => socket.once('message', (m) => resolve(m.toString())))
    socket.send([
      `OPTIONS sip:kns@${host}:${port} SIP/2.0`, `Via: SIP/2.0/UDP ${local}:${socket.address().port};branch=${branch}`,
      `From: <sip:sbc@${local}>;tag=1`, `To: <sip:kns@${host}>`, `Call-ID: ${callId}`, 'CSeq: 1 OPTIONS', 'Content-Length: 0', '', '',
    ].join('\r\n'), port, host)
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), options.timeoutMs ?? 1500) })
    try {
      return await Promise.race([answer, late])
    } finally {
      clearTimeout(timer)
    }
  } finally {
    socket.close()
  }
}
