/**
 * Worker thread of `kns stats import`: reads, parses, validates and hashes a usage file
 * (sessionBatches) and posts the batches to the importing thread, which spends its time on
 * the database. It runs ahead by at most the credit the importing thread grants.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { ValidationError } from '../errors.ts'
import { createClientHasher } from './client-hash.ts'
import { sessionBatches } from './session-batches.ts'

export interface BatchWorkerData {
  path: string; secret: Uint8Array; now: number; size: number
  /** Also write each batch's rows as COPY text (PostgreSQL): here, not on the importing thread. */
  copyText: boolean
}

/** A bulk import meets each client many times: remember more of them than the server does. */
const HASH_CACHE = 1_000_000

const { path, secret, now, size, copyText: wantCopy } = workerData as BatchWorkerData
const port = parentPort!
let credit = 0
let wake: (() => void) | undefined
port.on('message', (granted: number) => {
  credit += granted
  wake?.()
})

try {
  for await (const batch of sessionBatches(path, createClientHasher(Buffer.from(secret), HASH_CACHE), now, size, { copy: wantCopy })) {
    while (credit === 0) await new Promise<void>((resolve) => { wake = resolve })
    credit--
    port.postMessage({ batch })
  }
  port.postMessage({ done: true })
} catch (err) {
  port.postMessage({ error: { message: (err as Error).message, validation: err instanceof ValidationError } })
}
