/**
 * One SIP INVITE sent over UDP from a cluster host straight to nodes, byte for byte the same
 * datagram each time: what an SBC's retransmission looks like when it lands on another node
 * (a dispatcher restarted, DNS SRV, an SBC that reaches the nodes itself). It is sent from the
 * host's own address (the nodes answer only SIP_TRUSTED_SOURCES), by a small script run in
 * the host's namespace: per step, the INVITE to a target, its final response awaited, and an
 * ACK (RFC 3261 17.1.1.3: same branch, the response's To) when the step says so.
 */
import { NODE } from '../../support/process.ts'
import { baseEnv, type Host } from './hosts.ts'

export interface SipStep {
  /** <address>:<port> of the node. */
  target: string
  /** ACK the final response (ends the transaction there); without it the next step is a retransmission to a live one. */
  ack: boolean
}

export interface SipFinal {
  status: number
  /** Lower-case names, every value. */
  headers: Map<string, string[]>
  raw: string
}

// Plain JavaScript for `node -e` (the namespace has no access to the test's modules).
const SCRIPT = String.raw`
const dgram = require('node:dgram')
const [address, template, stepsJson] = process.argv.slice(1)
const steps = JSON.parse(stepsJson)
const socket = dgram.createSocket('udp4')
let waiting = null
socket.on('message', (message, from) => {
  const text = message.toString()
  const status = Number(/^SIP\/2\.0 (\d{3})/.exec(text)?.[1])
  // Only the final response of the node asked now (an earlier node's retransmissions are not it).
  if (!(status >= 200) || waiting === null || waiting.from !== from.address + ':' + from.port) return
  const done = waiting.resolve
  waiting = null
  done(text)
})
socket.bind(0, address, async () => {
  const invite = template.replaceAll('[local_port]', String(socket.address().port))
  const line = (name) => invite.split('\r\n').find((l) => l.toLowerCase().startsWith(name.toLowerCase() + ':'))
  const finals = []
  for (const step of steps) {
    const [host, port] = step.target.split(':')
    let timer
    const text = await new Promise((resolve) => {
      waiting = { from: step.target, resolve }
      timer = setTimeout(() => { if (waiting?.resolve === resolve) { waiting = null; resolve(null) } }, 5000)
      socket.send(invite, Number(port), host)
    })
    clearTimeout(timer)
    finals.push(text)
    if (text !== null && step.ack) {
      const to = text.split('\r\n').find((l) => /^to:/i.test(l))
      const cseq = /^CSeq:\s*(\d+)/i.exec(line('CSeq'))[1]
      const ack = ['ACK ' + invite.split(' ')[1] + ' SIP/2.0', line('Via'), line('From'), to, line('Call-ID'), 'CSeq: ' + cseq + ' ACK',
        'Max-Forwards: 70', 'Content-Length: 0', '', ''].join('\r\n')
      socket.send(ack, Number(port), host)
    }
  }
  process.stdout.write(JSON.stringify(finals))
  socket.close()
})
`

/**
 * Sends `invite` (CRLF lines; `[local_port]` is replaced by the sending port, for Via and
 * Contact) from `host` as `steps` say; the final response of each step, or undefined when a
 * node sent none within 5 s.
 */
export async function sendInviteFrom(host: Host, invite: string, steps: SipStep[]): Promise<Array<SipFinal | undefined>> {
  const result = await host.run(NODE, ['-e', SCRIPT, host.address, invite, JSON.stringify(steps)], { env: baseEnv(), timeoutMs: 10_000 + steps.length * 6000 })
  if (result.code !== 0) throw new Error(`the SIP sender on ${host.name} failed: ${result.stderr}`)
  return (JSON.parse(result.stdout) as Array<string | null>).map((raw) => (raw === null ? undefined : parseFinal(raw)))
}

function parseFinal(raw: string): SipFinal {
  const [statusLine, ...lines] = raw.split('\r\n')
  const headers = new Map<string, string[]>()
  for (const line of lines) {
    if (line === '') break
    const colon = line.indexOf(':')
    if (colon === -1) continue
    const name = line.slice(0, colon).trim().toLowerCase()
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()])
  }
  return { status: Number(/^SIP\/2\.0 (\d{3})/.exec(statusLine ?? '')?.[1]), headers, raw }
}

/** An INVITE as an SBC behind `dispatcher` sends it (Request-URI and To at the dispatcher's address), from `host`. */
export function inviteFrom(host: Host, call: { dispatcher: string; to: string; from: string; uriParams?: string; headers?: string[] }): string {
  const tag = Math.random().toString(16).slice(2, 10)
  const id = `${Math.random().toString(16).slice(2)}@${host.address}`
  return [
    `INVITE sip:${call.to}@${call.dispatcher}${call.uriParams ?? ''} SIP/2.0`,
    `Via: SIP/2.0/UDP ${host.address}:[local_port];rport;branch=z9hG4bK-${Math.random().toString(16).slice(2)}`,
    `From: <sip:${call.from}@${host.address};user=phone>;tag=${tag}`,
    `To: <sip:${call.to}@${call.dispatcher}>`,
    `Call-ID: ${id}`,
    'CSeq: 1 INVITE',
    `Contact: <sip:sbc@${host.address}:[local_port]>`,
    'Max-Forwards: 70',
    ...(call.headers ?? []),
    'Content-Length: 0',
    '', '',
  ].join('\r\n')
}
