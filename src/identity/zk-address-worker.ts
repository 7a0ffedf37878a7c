/**
 * The worker side of AddressWorkers (address-workers.ts): derives one zkLogin address per task
 * with the server secret it was started with, and says how long the derivation took on this
 * thread (what the pool's wait estimate is made of).
 */
import { workerData } from 'node:worker_threads'
import { zkLoginAddressFor } from './zk-address.ts'

export interface AddressTask { issuer: string; clientId: string; userId: string }
export interface AddressResult { address: string; ms: number }

const secret = Buffer.from((workerData as { secret: Uint8Array }).secret)

export default function deriveAddress(task: AddressTask): AddressResult {
  const started = performance.now()
  const address = zkLoginAddressFor(secret, task.issuer, task.clientId, task.userId)
  return { address, ms: performance.now() - started }
}
