/**
 * The batches of sessionBatches, produced by a worker thread (reader-thread.ts) so that
 * parsing and hashing run beside the database work of the importing thread.
 */
import { Worker } from 'node:worker_threads'
import { ValidationError } from '../../errors.ts'
import type { BatchWorkerData } from './reader-thread.ts'
import { IMPORT_BATCH, type RawBatch } from './session-batches.ts'

/**
 * Batches the worker may have ready ahead of the importing thread: more than a busy week's
 * worth, so that it reads on while a week's rollups are recomputed (3 left both threads idle
 * a third of a 10-million-session import, each waiting for the other).
 */
const AHEAD = 24

type Message = { batch: RawBatch } | { done: true } | { error: { message: string; validation: boolean } }

/** Clients the reader numbers at most (about 200 bytes each): a bulk import meets each one many times. */
const CLIENT_LIMIT = 1_000_000

export async function* workerBatches(path: string, secret: Buffer, now: number, options: { size?: number; copyText?: boolean; clientLimit?: number } = {}): AsyncGenerator<RawBatch> {
  const data: BatchWorkerData = {
    path, secret: new Uint8Array(secret), now, size: options.size ?? IMPORT_BATCH, copyText: options.copyText ?? false, clientLimit: options.clientLimit ?? CLIENT_LIMIT,
  }
  const worker = new Worker(new URL('./reader-thread.ts', import.meta.url), { workerData: data })
  const queue: Message[] = []
  let wake: (() => void) | undefined
  let failure: Error | undefined
  worker.on('message', (message: Message) => { queue.push(message); wake?.() })
  worker.on('error', (err) => { failure = err; wake?.() })
  worker.on('exit', (code) => {
    if (code !== 0) failure ??= new Error(`the import's reader thread stopped (exit code ${code})`)
    wake?.()
  })
  worker.postMessage(AHEAD)
  try {
    for (;;) {
      while (queue.length === 0 && failure === undefined) await new Promise<void>((resolve) => { wake = resolve })
      const message = queue.shift()
      if (message === undefined) throw failure!
      if ('done' in message) return
      if ('error' in message) {
        const { validation, message: text } = message.error
        throw validation ? new ValidationError(text) : new Error(text)
      }
      worker.postMessage(1)
      yield message.batch
    }
  } finally {
    await worker.terminate()
  }
}
