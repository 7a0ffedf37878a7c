/**
 * The reference for call-signature-verification: raw `crypto.verify` ES256 in one process
 * doing nothing else. Started by bench/caller-bench.ts; on each `{ seconds }` message it
 * verifies pre-made signatures in a tight loop for that long and answers
 * `{ verified, failed, seconds, cpuUs }`. Between slices it sits idle, so it loads the machine only
 * while it is measured, like the servers.
 *
 * The inputs are shaped like the benchmark's PASSporTs: 20 P-256 keys as prepared KeyObjects,
 * 1 000 signing inputs of the same length, JOSE r||s (ieee-p1363) signatures, and the same
 * call the server makes (`verify('sha256', data, { key, dsaEncoding }, signature)`).
 */
import { generateKeyPairSync, randomUUID, sign, verify, type KeyObject } from 'node:crypto'

if (process.send === undefined) {
  console.error('bench/caller-verify-worker.ts is started by bench/api.bench.ts (it needs an IPC channel)')
  process.exit(2)
}

interface Sample { key: KeyObject; data: Buffer; signature: Buffer }

const KEYS = 20
const SAMPLES = 1000
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

const pairs = Array.from({ length: KEYS }, () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' }))
const samples: Sample[] = Array.from({ length: SAMPLES }, (_, i) => {
  const { publicKey, privateKey } = pairs[i % KEYS]!
  const header = b64({ alg: 'ES256', typ: 'passport', ppt: 'shaken', kid: randomUUID().replaceAll('-', '') })
  const payload = b64({ attest: 'A', dest: { tn: ['+12125550100'] }, iat: Math.floor(Date.now() / 1000), orig: { tn: `+1650${String(i).padStart(7, '0')}` }, origid: randomUUID() })
  const data = Buffer.from(`${header}.${payload}`)
  return { key: publicKey, data, signature: sign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' }) }
})

let next = 0
function run(seconds: number): { verified: number; failed: number; seconds: number; cpuUs: number } {
  let verified = 0
  let failed = 0
  const cpu = process.cpuUsage()
  const started = performance.now()
  const deadline = started + seconds * 1000
  let now = started
  while (now < deadline) {
    for (let i = 0; i < 32; i++) {
      const s = samples[next]!
      next = (next + 1) % SAMPLES
      if (verify('sha256', s.data, { key: s.key, dsaEncoding: 'ieee-p1363' }, s.signature)) verified++
      else failed++
    }
    now = performance.now()
  }
  const used = process.cpuUsage(cpu)
  return { verified, failed, seconds: (now - started) / 1000, cpuUs: used.user + used.system }
}

process.on('message', (message) => {
  if (message === 'stop') process.exit(0)
  process.send!(run((message as { seconds: number }).seconds))
})
process.on('disconnect', () => process.exit(0))
process.send({ ready: true })
