/**
 * A UDP SBC for the SIP benchmark (bench/sip.bench.ts): INVITEs carrying calls' Identity
 * headers, each 302 answered with its ACK; a closed loop (answers per second) or an even
 * rate (each answer's latency, from when its INVITE was sent).
 */
import { fork } from 'node:child_process'
import { createSocket, type Socket } from 'node:dgram'
import { percentile } from './caller-paced.ts'

export interface Call { orig: string; dest: string; identities: string[] }

/** A UDP SBC: INVITEs with the calls' Identity headers, each 302 ACKed; closed loop or paced. */
export class SipLoad {
  readonly #socket: Socket
  readonly #port: number
  readonly #pending = new Map<string, { sent: number; to: string; call: Call }>()
  #counter = 0
  #onAnswer: ((latencyMs: number, ok: boolean) => void) | undefined

  private constructor(socket: Socket, port: number) {
    this.#socket = socket
    this.#port = port
    socket.on('message', (message) => this.#answer(message.toString('latin1')))
  }

  static async open(port: number): Promise<SipLoad> {
    const socket = createSocket('udp4')
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
    socket.setRecvBufferSize(8 * 1024 * 1024)
    return new SipLoad(socket, port)
  }

  send(call: Call): void {
    const branch = `z9hG4bK${++this.#counter}b${process.pid}`
    const local = this.#socket.address().port
    const to = `<sip:${call.dest}@127.0.0.1>`
    const text = [
      `INVITE sip:${call.dest}@127.0.0.1:${this.#port};user=phone SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=${branch}`,
      `From: <sip:${call.orig}@127.0.0.1;user=phone>;tag=${this.#counter}`,
      `To: ${to}`,
      `Call-ID: ${this.#counter}@bench`,
      'CSeq: 1 INVITE',
      'Max-Forwards: 70',
      ...call.identities.map((id) => `Identity: ${id}`),
      'Content-Length: 0',
      '', '',
    ].join('\r\n')
    this.#pending.set(branch, { sent: performance.now(), to, call })
    this.#socket.send(text, this.#port, '127.0.0.1')
  }

  #answer(text: string): void {
    const status = Number(text.slice(8, 11))
    if (status < 200) return
    const branch = /;branch=([^;\r\n]+)/.exec(text)?.[1]
    const pending = branch === undefined ? undefined : this.#pending.get(branch)
    if (pending === undefined) return // a retransmission of an answer already counted
    this.#pending.delete(branch!)
    const local = this.#socket.address().port
    const toLine = /\r\nTo: ([^\r\n]+)/.exec(text)?.[1] ?? pending.to
    const ack = [
      `ACK sip:${pending.call.dest}@127.0.0.1:${this.#port};user=phone SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=${branch}`,
      `From: <sip:${pending.call.orig}@127.0.0.1;user=phone>;tag=0`,
      `To: ${toLine}`,
      `Call-ID: ${/\r\nCall-ID: ([^\r\n]+)/.exec(text)?.[1] ?? ''}`,
      'CSeq: 1 ACK',
      'Max-Forwards: 70',
      'Content-Length: 0',
      '', '',
    ].join('\r\n')
    this.#socket.send(ack, this.#port, '127.0.0.1')
    this.#onAnswer?.(performance.now() - pending.sent, status === 302 && text.includes('verstat=TN-Validation-Passed'))
  }

  /** `inFlightCalls` INVITEs in flight for `seconds`: answers per second. */
  async closedLoop(calls: Call[], seconds: number, inFlightCalls: number): Promise<{ rps: number; failed: number }> {
    let done = 0
    let failed = 0
    let i = 0
    const until = performance.now() + seconds * 1000
    await new Promise<void>((resolve) => {
      let inFlight = 0
      this.#onAnswer = (_latency, ok) => {
        inFlight--
        if (ok) done++
        else failed++
        if (performance.now() < until) {
          inFlight++
          this.send(calls[i++ % calls.length]!)
        } else if (inFlight === 0) resolve()
      }
      for (let c = 0; c < inFlightCalls; c++) {
        inFlight++
        this.send(calls[i++ % calls.length]!)
      }
      // Lost datagrams must not hold the slice: it ends 3 s after its time at the latest.
      setTimeout(resolve, seconds * 1000 + 3000).unref()
    })
    this.#onAnswer = undefined
    this.#pending.clear()
    return { rps: done / seconds, failed }
  }

  /** An even `rate` of INVITEs for `seconds` (open loop): the latency of each answer. */
  async paced(calls: Call[], rate: number, seconds: number): Promise<{ latencies: number[]; failed: number; lost: number }> {
    const latencies: number[] = []
    let failed = 0
    let sent = 0
    this.#onAnswer = (latency, ok) => {
      if (ok) latencies.push(latency)
      else failed++
    }
    const started = performance.now()
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        const elapsed = performance.now() - started
        const due = Math.min(Math.floor((elapsed / 1000) * rate), Math.floor(seconds * rate))
        while (sent < due) this.send(calls[sent++ % calls.length]!)
        if (elapsed >= seconds * 1000) {
          clearInterval(tick)
          resolve()
        }
      }, 1)
    })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    this.#onAnswer = undefined
    const lost = this.#pending.size
    this.#pending.clear()
    return { latencies, failed, lost }
  }

  close(): void {
    this.#socket.close()
  }
}


export interface PacedSummary { p50: number; p90: number; p99: number; p999: number; max: number; answered: number; failed: number; lost: number }

export function summarizeLatencies(latencies: number[], failed: number, lost: number): PacedSummary {
  const at = (p: number) => percentile(latencies, p) ?? NaN
  return { p50: at(50), p90: at(90), p99: at(99), p999: at(99.9), max: at(100), answered: latencies.length, failed, lost }
}

/** The paced run in bench/sip-paced-child.ts: the calls go over IPC before the clock starts. */
export async function pacedInChild(port: number, calls: Call[], rate: number, seconds: number): Promise<PacedSummary> {
  const child = fork(new URL('./sip-paced-child.ts', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  try {
    return await new Promise<PacedSummary>((resolve, reject) => {
      child.once('message', (message) => resolve(message as PacedSummary))
      child.once('error', reject)
      child.once('exit', (code) => reject(new Error(`the paced SIP generator exited with code ${code}`)))
      child.send({ port, calls, rate, seconds })
    })
  } finally {
    child.kill()
  }
}

/** The reference server (bench/sip-bare-server.ts) in its own process: its UDP port, and how to stop it. */
export async function startBareSip(): Promise<{ port: number; stop(): void }> {
  const child = fork(new URL('./sip-bare-server.ts', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { port: number }).port))
    child.once('error', reject)
  })
  return { port, stop: () => { child.kill() } }
}
