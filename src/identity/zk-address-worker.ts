/**
 * The worker side of AddressWorkers (address-workers.ts): derives one zkLogin address per task
 * with the server secret it was started with.
 */
import { workerData } from 'node:worker_threads'
import { zkLoginAddressFor } from './zk-address.ts'

export interface AddressTask { issuer: string; clientId: string; userId: string }

const secret = Buffer.from((workerData as { secret: Uint8Array }).secret)

export default function deriveAddress(task: AddressTask): string {
  return zkLoginAddressFor(secret, task.issuer, task.clientId, task.userId)
}
