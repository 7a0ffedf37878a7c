/**
 * The paced SIP generator of bench/sip.bench.ts, in a process of its own so that no other
 * work's garbage collection is timed as the server's latency. Gets `{port, calls, rate,
 * seconds}` over IPC, answers the latency summary.
 */
import { SipLoad, summarizeLatencies, type Call } from './sip-load.ts'

if (process.send === undefined) {
  console.error('bench/sip-paced-child.ts is started by bench/sip.bench.ts (it needs an IPC channel)')
  process.exit(2)
}

process.once('message', async (message) => {
  const { port, calls, rate, seconds } = message as { port: number; calls: Call[]; rate: number; seconds: number }
  const load = await SipLoad.open(port)
  const run = await load.paced(calls, rate, seconds)
  load.close()
  process.send!(summarizeLatencies(run.latencies, run.failed, run.lost))
})
