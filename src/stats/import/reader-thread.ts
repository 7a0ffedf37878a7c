/**
 * Worker thread of `kns stats import`: reads, parses, validates and hashes a usage file
 * (sessionBatches), collects each week's activity (WeekCollector) and posts the batches to the
 * importing thread, which spends its time on the database. It runs ahead by at most the
 * credit the importing thread grants.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { ValidationError } from '../../errors.ts'
import { createClientHasher } from '../ingest/client-hash.ts'
import { ClientNumbers } from '../rollups/client-numbers.ts'
import { sessionBatches, type RawBatch } from './session-batches.ts'
import { bucketStart, WEEK } from '../time.ts'
import { WeekCollector } from '../rollups/week-activity.ts'

export interface BatchWorkerData {
  path: string; secret: Uint8Array; now: number; size: number
  /** Also write each batch's rows as COPY text (PostgreSQL): here, not on the importing thread. */
  copyText: boolean
  /** Clients numbered at most (client-numbers.ts); past that, weeks are read back instead of collected. */
  clientLimit: number
}

/** A bulk import meets each client many times: remember more of them than the server does. */
const HASH_CACHE = 1_000_000
const { path, secret, now, size, copyText: wantCopy, clientLimit } = workerData as BatchWorkerData
const port = parentPort!
let credit = 0
let wake: (() => void) | undefined
port.on('message', (granted: number) => {
  credit += granted
  wake?.()
})

const send = async (batch: RawBatch) => {
  while (credit === 0) await new Promise<void>((resolve) => { wake = resolve })
  credit--
  port.postMessage({ batch })
}

const weeks = new WeekCollector()
const numbers = new ClientNumbers()
const numberOfId = new Map<string, number>()
const hashOnce = createClientHasher(Buffer.from(secret), 1)
const hashCached = createClientHasher(Buffer.from(secret), HASH_CACHE)
/** The client number of each row of the batch being read. */
let rowClients: number[] = []

/** Hashes a client and notes its number for the collector; plain hashing once the numbers run out. */
function hashClient(clientId: string): string {
  if (!weeks.enabled) return hashCached(clientId)
  let n = numberOfId.get(clientId)
  if (n === undefined) {
    if (numberOfId.size >= clientLimit) {
      weeks.stop()
      numberOfId.clear()
      return hashCached(clientId)
    }
    n = numbers.numberOf(hashOnce(clientId))
    numberOfId.set(clientId, n)
  }
  rowClients.push(n)
  return numbers.hashes[n]!
}

try {
  let announced = 0
  let last: RawBatch | undefined
  for await (const batch of sessionBatches(path, hashClient, now, size, { copy: wantCopy })) {
    const clients = rowClients
    rowClients = []
    if (weeks.enabled && batch.bad.length === 0) {
      if (clients.length === batch.rows.length) {
        weeks.add(batch.rows, clients)
        if (numbers.size > announced) {
          batch.newClients = { first: announced, hashes: numbers.hashes.slice(announced) }
          announced = numbers.size
        }
        // This batch holds no row of the weeks before its first: the file has gone past them.
        if (batch.first !== Infinity) batch.finished = weeks.finishBefore(numbers, bucketStart(batch.first, WEEK))
      } else weeks.stop()
    }
    if (!weeks.enabled) batch.stopCollecting = true
    // COPY text is all the importing thread stores: the rows themselves need not be cloned across.
    if (batch.copy !== undefined) {
      batch.starts = Float64Array.from(batch.rows, (row) => row[0] as number)
      batch.rows = []
    }
    await send(last = batch)
  }
  // The weeks still open: as a batch without rows.
  if (weeks.enabled) await send({ rows: [], first: Infinity, bad: [], read: last?.read ?? 0, bytes: last?.bytes ?? 0, finished: weeks.finishBefore(numbers) })
  port.postMessage({ done: true })
} catch (err) {
  port.postMessage({ error: { message: (err as Error).message, validation: err instanceof ValidationError } })
}
