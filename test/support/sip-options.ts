/**
 * A SIP OPTIONS over UDP from a socket of its own (so from a port of its own), as an SBC's
 * keep-alive: what the server answered, whole, or undefined after `timeoutMs`.
 */
import { createSocket } from 'node:dgram'

export async function sipOptionsOverUdp(port: number, options: { callId?: string; timeoutMs?: number } = {}): Promise<string | undefined> {
  const callId = options.callId ?? `options-${Math.random().toString(16).slice(2)}`
  const socket = createSocket('udp4')
  try {
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
    const answer = new Promise<string>((resolve) => socket.once('message', (m) => resolve(m.toString())))
    socket.send([
      `OPTIONS sip:kns@127.0.0.1:${port} SIP/2.0`, `Via: SIP/2.0/UDP 127.0.0.1:${socket.address().port};branch=z9hG4bK-${callId}`,
      'From: <sip:sbc@127.0.0.1>;tag=1', 'To: <sip:kns@127.0.0.1>', `Call-ID: ${callId}`, 'CSeq: 1 OPTIONS', 'Content-Length: 0', '', '',
    ].join('\r\n'), port, '127.0.0.1')
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
