/**
 * Caller verification (area B) in `npm run bench`: the two endpoints over the seeded numbers,
 * and the raw `crypto.verify` reference in its own process (bench/caller-verify-worker.ts).
 */
import { fork } from 'node:child_process'
import autocannon from 'autocannon'
import type { Endpoint, Reference, Summary } from './bench-server.ts'
import { signCalls, type CallerSeed } from './caller-seed.ts'

export const VERIFY_NAME = 'POST /numsys/call-signature-verification'
export const LOOKUP_NAME = 'POST /numsys/object-id-lookup'

/** Bodies are re-signed before a slice when older than this (CALL_MAX_AGE_S is 60 by default). */
export const RESIGN_AFTER_S = 30

/**
 * Both caller endpoints, rotating over every seeded number. Verification bodies are signed
 * just before the endpoint's measurement (`prepare`) and again whenever they are older than
 * RESIGN_AFTER_S, so the server's default 60 s age check stays on and every token passes it.
 * The first warm-up runs one object-id-lookup per number, so the key cache holds all of them
 * (the steady state of a running server) before anything is measured.
 */
export function callerEndpoints(data: CallerSeed, log: (line: string) => void): Endpoint[] {
  const headers = { 'content-type': 'application/json', 'x-api-key': data.apiKey }
  const lookups = data.numbers.map((n) => JSON.stringify({ phoneNumber: n.phone }))
  let bodies: string[] = []
  let signedAt = 0
  let calls = 0
  let reads = 0
  let warmed = false
  const warm = async (port: number) => {
    if (warmed) return
    warmed = true
    let i = 0
    const started = Date.now()
    const result = await autocannon({
      url: `http://127.0.0.1:${port}`, connections: 32, amount: lookups.length, timeout: 10,
      requests: [{ method: 'POST', path: '/numsys/object-id-lookup', headers, setupRequest: (r) => ({ ...r, body: lookups[i++ % lookups.length]! }) }],
    })
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`cache warm-up: ${result.non2xx} non-2xx, ${result.errors} errors`)
    log(`   key cache warmed with ${lookups.length} lookups in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  }
  return [{
    name: VERIFY_NAME, method: 'POST', headers, warm,
    prepare() {
      if (Date.now() - signedAt < RESIGN_AFTER_S * 1000) return
      const started = Date.now()
      bodies = signCalls(data)
      signedAt = Date.now()
      log(`   signed ${bodies.length} PASSporTs in ${((signedAt - started) / 1000).toFixed(1)} s`)
    },
    next: () => ({ path: '/numsys/call-signature-verification', body: bodies[calls++ % bodies.length]! }),
    ok: (body) => body.startsWith('{"success":true'),
  }, {
    name: LOOKUP_NAME, method: 'POST', headers, warm,
    next: () => ({ path: '/numsys/object-id-lookup', body: lookups[reads++ % lookups.length]! }),
    ok: (body) => body.startsWith('{"objectId":"0x') && body.includes('"registries":["0x'),
  }]
}

/** The footnote on the caller rows of the table. */
export function callerNote(sizes: { numbers: number; keystores: number }, halfRateS: number, sliceS: number): string {
  return `Caller verification: ${sizes.numbers} numbers over ${sizes.keystores} keystores (one P-256 key each), requests ` +
    `rotating over all numbers; valid PASSporTs with kid, signed just before measuring and re-signed when older than ` +
    `${RESIGN_AFTER_S} s (CALL_MAX_AGE_S at its default 60 s); the key cache warmed with one lookup per number first. ` +
    `crypto.verify: raw ES256 verification (P-256 KeyObject, r||s signatures) in one process doing nothing else, in the ` +
    `slices between the endpoint's. "at 0.5 × peak": half the peak measured just before, ${halfRateS} s evenly paced ` +
    `(open loop over keep-alive connections opened beforehand, latency from sending; the target applies), with the bare route paced alike as reference (the machine's ` +
    `own p99) and ${halfRateS} s of autocannon overallRate for comparison (it sends each connection's per-second quota in a ` +
    `burst and over-corrects latency with a 1 ms expected interval); in turns, ${sliceS} s slices.`
}

interface VerifyRun { verified: number; failed: number; seconds: number; cpuUs: number }

export interface RawVerify extends Reference<VerifyRun> {
  /** Every measured run, for the overall row. */
  all: VerifyRun[]
  stop(): Promise<void>
}

/** Verifies/s over the runs; a signature that failed to verify is a problem (it never should). */
export function summarizeVerify(runs: VerifyRun[]): Summary {
  const verified = runs.reduce((n, r) => n + r.verified, 0)
  const failed = runs.reduce((n, r) => n + r.failed, 0)
  const seconds = runs.reduce((n, r) => n + r.seconds, 0)
  const cpuUs = runs.reduce((n, r) => n + r.cpuUs, 0) / (verified + failed)
  return { rps: (verified + failed) / seconds, p99: null, problems: failed > 0 ? `${failed} signatures did not verify` : '', cpuUs }
}

/** Starts the raw-verify process; its first (unrecorded) run is a warm-up. */
export async function startRawVerify(warmupS: number): Promise<RawVerify> {
  const child = fork(new URL('./caller-verify-worker.ts', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const reply = () => new Promise<unknown>((resolve, reject) => {
    const onExit = () => reject(new Error('crypto.verify process exited'))
    child.once('exit', onExit)
    child.once('message', (message) => { child.off('exit', onExit); resolve(message) })
  })
  await reply()
  const all: VerifyRun[] = []
  const runOnce = async (seconds: number) => {
    const answer = reply()
    child.send({ seconds })
    return await answer as VerifyRun
  }
  if (warmupS > 0) await runOnce(warmupS)
  return {
    name: 'crypto.verify',
    all,
    async run(seconds) {
      const result = await runOnce(seconds)
      all.push(result)
      return result
    },
    summarize: summarizeVerify,
    async stop() {
      if (child.exitCode === null) child.send('stop')
      await exited
    },
  }
}
