/**
 * The light client and the readiness probe of bench/overload.bench.ts, in a process of their
 * own so the flood's load generator does not delay their clocks, for `durationMs`; answers the
 * latencies and failures over IPC. `calls`: one call verification every 50 ms (sequential, its
 * own API key) and GET /readyz every 100 ms. `details`: one `transaction_details` every 50 ms
 * from `localAddress` (another loopback address: another client to the server) with a
 * `timeoutMs` timeout, and /readyz likewise, each on a connection opened (by one unmeasured
 * request) before it says `{ connected: true }`: a client already connected when the flood
 * starts, as a carrier's keep-alive pool is.
 */
import { Agent, request } from 'node:http'

interface Job {
  kind: 'calls' | 'details'
  port: number
  durationMs: number
  /** calls: the light client's key and its signed calls. */
  apiKey?: string
  bodies?: string[]
  /** details: the approval numbers read. */
  refs?: string[]
  localAddress?: string
  timeoutMs?: number
}
interface Sample { ms: number; status: number }

function call(agent: Agent, job: Job, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Sample> {
  const started = performance.now()
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1', port: job.port, method, path, headers, agent, timeout: job.timeoutMs ?? 10_000,
      ...(job.localAddress === undefined ? {} : { localAddress: job.localAddress }),
    }, (res) => {
      res.resume()
      res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode ?? 0 }))
    })
    req.on('timeout', () => { req.destroy(); resolve({ ms: performance.now() - started, status: -1 }) })
    req.on('error', () => resolve({ ms: performance.now() - started, status: 0 }))
    req.end(body)
  })
}

async function loop(everyMs: number, until: number, one: (i: number) => Promise<Sample>): Promise<Sample[]> {
  const samples: Sample[] = []
  for (let i = 0; performance.now() < until; i++) {
    const started = performance.now()
    samples.push(await one(i))
    const wait = everyMs - (performance.now() - started)
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
  }
  return samples
}

process.on('message', async (job: Job) => {
  const lightAgent = new Agent({ keepAlive: true, maxSockets: 1 })
  const readyAgent = new Agent({ keepAlive: true, maxSockets: 1 })
  const light = job.kind === 'calls'
    ? (i: number) => call(lightAgent, job, 'POST', '/numsys/call-signature-verification',
      { 'content-type': 'application/json', 'x-api-key': job.apiKey! }, job.bodies![i % job.bodies!.length])
    : (i: number) => call(lightAgent, job, 'GET', `/numsys/transaction_details?ref=${job.refs![i % job.refs!.length]}`, {})
  await Promise.all([light(0), call(readyAgent, job, 'GET', '/readyz', {})])
  process.send!({ connected: true })
  const until = performance.now() + job.durationMs
  const [lightSamples, ready] = await Promise.all([
    loop(50, until, light),
    loop(100, until, () => call(readyAgent, job, 'GET', '/readyz', {})),
  ])
  process.send!({ light: lightSamples, ready })
})
