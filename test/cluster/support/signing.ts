/**
 * The operator's SHAKEN signing setup on a cluster, before the nodes start (a `prepare` step):
 * the test PKI's SPC as a credential and the API key SIP signs with, made by `kns` on a
 * node's host. Returns the nodes' SIP_SIGNING_KEY.
 */
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ShakenPki } from '../../support/shaken-pki.ts'
import type { PreparedCluster } from './cluster.ts'
import { chownTree } from './hosts.ts'

/** The x5u the credential names (never fetched: the nodes sign, they do not verify with it). */
export const SIGNING_X5U = 'https://certs.example.com/spc.pem'
/** The numbers the signing key may sign for. */
export const SIGNED_NUMBERS = '+1202555*'

export async function addSigningCredential(c: PreparedCluster, pki: ShakenPki): Promise<{ SIP_SIGNING_KEY: string }> {
  const dir = join(c.network.runDir, 'pki')
  mkdirSync(dir)
  writeFileSync(join(dir, 'spc.key'), pki.leaves.spc.key, { mode: 0o600 })
  writeFileSync(join(dir, 'spc-chain.pem'), pki.leaves.spc.bundle)
  chownTree(dir, c.app.user)
  const credential = await c.kns(['shaken', 'credential', 'add', '--name', 'carrier', '--key', join(dir, 'spc.key'),
    '--cert', join(dir, 'spc-chain.pem'), '--x5u', SIGNING_X5U, '--display-name', 'Acme Carrier', '--json'])
  assert.equal(credential.code, 0, credential.stderr)
  const key = await c.kns(['api-key', 'create', '--vendor', 'SBC', '--scopes', 'signing', '--credentials', 'carrier',
    '--attest', 'A,B,C', '--numbers', SIGNED_NUMBERS, '--json'])
  assert.equal(key.code, 0, key.stderr)
  return { SIP_SIGNING_KEY: (JSON.parse(key.stdout) as { id: string }).id }
}
