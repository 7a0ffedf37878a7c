/**
 * The light client and the readiness probe of bench/overload.bench.ts, in a process of their
 * own so the flood's load generator does not delay their clocks: one call verification every
 * 50 ms (sequential, its own API key) and GET /readyz every 100 ms, for `durationMs`; answers
 * the latencies and failures over IPC.
 */
import { Agent, request } from 'node:http'

interface Job { port: number; apiKey: string; bodies: string[]; durationMs: number }
interface Sample { ms: number; status: number }

const agent = new Agent({ keepAlive: true, maxSockets: 2 })

function call(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Sample> {
  const started = performance.now()
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent, timeout: 10_000 }, (res) => {
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
  const until = performance.now() + job.durationMs
  const headers = { 'content-type': 'application/json', 'x-api-key': job.apiKey }
  const [light, ready] = await Promise.all([
    loop(50, until, (i) => call(job.port, 'POST', '/numsys/call-signature-verification', headers, job.bodies[i % job.bodies.length])),
    loop(100, until, () => call(job.port, 'GET', '/readyz', {})),
  ])
  process.send!({ light, ready })
})
