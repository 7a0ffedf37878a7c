/**
 * What the cluster tests do as a vendor, an owner and an operator: API keys and tokens made by
 * `kns` on a node's host, approvals created and decided over HTTP on whichever node (or
 * HAProxy) a test names.
 */
import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import pg from 'pg'
import { approvalPhoneBody, postJson } from '../../support/process.ts'
import type { Cluster } from './cluster.ts'

export const randomPhone = () => `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`

/** `kns api-key create <args> --json` on a node's host: the key's id and secret. */
export async function createKey(cluster: Cluster, args: string[]): Promise<{ id: string; key: string }> {
  const created = await cluster.kns(['api-key', 'create', ...args, '--json'])
  assert.equal(created.code, 0, created.stderr)
  return JSON.parse(created.stdout) as { id: string; key: string }
}

/** A token for a new number owned by `owner` (`kns token mint`, the embedded ledger): its object ID and the number. */
export async function mintToken(cluster: Cluster, owner: Ed25519Keypair): Promise<{ objectId: string; phoneNumber: string }> {
  const phoneNumber = randomPhone()
  const minted = await cluster.kns(['token', 'mint', '--phone', phoneNumber, '--owner', owner.toSuiAddress(), '--json'])
  assert.equal(minted.code, 0, minted.stderr)
  return { objectId: (JSON.parse(minted.stdout) as { objectId: string }).objectId, phoneNumber }
}

/** An approval of the token `objectId` created at `url` (a node or HAProxy) with `key`: its number. */
export async function createApproval(url: string, key: string, objectId: string, method: 'sign' | 'event' = 'sign'): Promise<string> {
  const { phoneNumber: _byToken, ...body } = approvalPhoneBody('')
  const created = await postJson(`${url}/numsys/approval-object-id`, { ...body, method, objectId }, { 'x-api-key': key })
  assert.equal(created.status, 200, JSON.stringify(created.body))
  return created.body.approvalNumber as string
}

export async function details(url: string, ref: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/numsys/transaction_details?ref=${ref}`, { signal: AbortSignal.timeout(10_000) })
  assert.equal(res.status, 200, `${url}: ${res.status}`)
  return (await res.json()) as Record<string, unknown>
}

/** The owner approves at `url`: signs the signMessage that node shows, and sends it to verify_signature there. */
export async function approveAt(url: string, ref: string, owner: Ed25519Keypair): Promise<void> {
  const signMessage = (await details(url, ref)).signMessage as string
  const { signature } = await owner.signPersonalMessage(new TextEncoder().encode(signMessage))
  const verdict = await postJson(`${url}/numsys/verify_signature`, { approvalNumber: ref, signature })
  assert.deepEqual([verdict.status, verdict.body.success], [200, true], JSON.stringify(verdict.body))
}

/** The owner denies at `url` (the approval page's "Deny"). */
export async function cancelAt(url: string, ref: string): Promise<void> {
  const verdict = await postJson(`${url}/numsys/approval-cancel`, { approvalNumber: ref })
  assert.deepEqual([verdict.status, verdict.body.success], [200, true], JSON.stringify(verdict.body))
}

/** A node's /readyz body (status, and the ledger watcher's state). */
export async function readiness(url: string): Promise<{ status: string; watcher?: string }> {
  const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) })
  return (await res.json()) as { status: string; watcher?: string }
}

/** Statements on the cluster's KNS database, as the kns role, through HAProxy (as the nodes reach it). */
export async function withDatabase<T>(cluster: Cluster, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: cluster.databaseUrl, connectionTimeoutMillis: 5000 })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}
