/**
 * The SIP benchmark's reference (bench/sip.bench.ts): a process that answers every INVITE at
 * once with a 302 carrying the same headers a verification answer has, and drops ACKs, doing
 * nothing else. Paced alike, its p99 is the machine's and the generator's own, which the
 * server's p99 is read against. Reports `{ port }` over IPC.
 */
import { createSocket } from 'node:dgram'

if (process.send === undefined) {
  console.error('bench/sip-bare-server.ts is started by bench/sip.bench.ts (it needs an IPC channel)')
  process.exit(2)
}

const socket = createSocket('udp4')
socket.on('message', (message, remote) => {
  const text = message.toString('latin1')
  if (!text.startsWith('INVITE ')) return
  const header = (name: string) => new RegExp(`\\r\\n${name}: ([^\\r\\n]+)`).exec(text)?.[1] ?? ''
  const answer = [
    'SIP/2.0 302 Moved Temporarily', `Via: ${header('Via')}`, `From: ${header('From')}`, `To: ${header('To')};tag=bare`,
    `Call-ID: ${header('Call-ID')}`, `CSeq: ${header('CSeq')}`,
    'Contact: <sip:+12125550100@127.0.0.1;user=phone?P-Asserted-Identity=%3Csip%3A%2B1%40h%3Bverstat%3DTN-Validation-Passed%3E>',
    'P-Asserted-Identity: <sip:+1@h;user=phone;verstat=TN-Validation-Passed>', 'Content-Length: 0', '', '',
  ].join('\r\n')
  socket.send(answer, remote.port, remote.address)
})
socket.bind(0, '127.0.0.1', () => {
  socket.setRecvBufferSize(4 * 1024 * 1024)
  process.send!({ port: socket.address().port })
})
process.on('disconnect', () => process.exit(0))
process.on('message', (message) => { if (message === 'stop') process.exit(0) })
