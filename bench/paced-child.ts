/**
 * The paced load generator's own process (see bench/caller-paced.ts): receives one run at a
 * time over IPC, answers with its result. Its heap holds only the run's requests and timings,
 * so its collections stay short and do not show up as server latency.
 */
import { runPaced, type PacedRun } from './caller-paced.ts'

process.on('message', (message) => {
  const run = message as PacedRun
  // Buffers arrive as Uint8Arrays through the advanced serialization.
  run.requests = run.requests.map((r) => Buffer.from(r.buffer, r.byteOffset, r.byteLength))
  runPaced(run).then((result) => process.send!(result), (err: unknown) => {
    process.stderr.write(`paced load generator: ${String(err)}\n`)
    process.exit(1)
  })
})
