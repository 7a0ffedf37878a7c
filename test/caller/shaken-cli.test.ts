/**
 * `kns shaken cert-info` on a real, publicly issued SHAKEN certificate and on the test PKI;
 * `kns shaken trust add|list|remove`.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { killAll, oneJson, ROOT, runKns } from '../support/process.ts'
import { makeShakenPki, TEST_RANGE, type ShakenPki } from '../support/shaken-pki.ts'

let pki: ShakenPki
let fresh: TestEnv

before(async () => {
  pki = makeShakenPki({ crlUrl: 'https://crl.example.test/inter.crl' })
  fresh = await freshDatabaseEnv({ KNS_SECRET: randomBytes(32).toString('hex') })
  assert.equal((await runKns(['migrate'], fresh.env)).code, 0)
})
after(async () => {
  await killAll()
  await fresh?.cleanup()
  pki?.cleanup()
})

test('cert-info reads a publicly issued SHAKEN certificate: subject, issuer, P-256, SPC 073H', async () => {
  const result = await runKns(['shaken', 'cert-info', join(ROOT, 'test/fixtures/shaken/transnexus-shaken-073h.pem'), '--json'], fresh.env)
  assert.equal(result.code, 0, result.stderr)
  const [cert] = oneJson(result).certificates as Array<Record<string, unknown>>
  assert.match(String(cert!.subject), /CN=SHAKEN 073H/)
  assert.match(String(cert!.issuer), /TransNexus.*SHAKEN Issuing CA3/)
  assert.equal(cert!.key, 'EC prime256v1')
  assert.deepEqual(cert!.keyUsage, ['digitalSignature'])
  assert.deepEqual(cert!.tnAuthList, { spcs: ['073H'], ranges: [], tns: [] })
  assert.deepEqual(cert!.crlDistributionPoints, ['https://authenticate-api.iconectiv.com/download/v1/crl'])
  assert.deepEqual(cert!.certificatePolicies, ['2.16.840.1.114569.1.1.3'], 'the SHAKEN certificate policy (CP 1.3)')
})

test('cert-info on a bundle describes each certificate; a delegate certificate shows its TN range', async () => {
  const file = join(pki.dir, 'range-bundle.pem')
  writeFileSync(file, pki.leaves.range.bundle)
  const result = await runKns(['shaken', 'cert-info', file], fresh.env)
  assert.equal(result.code, 0, result.stderr)
  assert.match(result.stdout, new RegExp(`TNAuthList:  TNs ${TEST_RANGE.start} \\+${TEST_RANGE.count}`))
  assert.match(result.stdout, /key:         EC prime256v1 \(CA\)/, 'the intermediate, second')
  const bad = await runKns(['shaken', 'cert-info', join(ROOT, 'package.json')], fresh.env)
  assert.equal(bad.code, 2)
})

test('trust add (CA certificates only), list, remove', async () => {
  const rootFile = join(pki.dir, 'root.pem')
  const added = oneJson(await runKns(['shaken', 'trust', 'add', rootFile, '--json'], fresh.env))
  const [anchor] = added.added as Array<{ fingerprint: string; subject: string }>
  assert.match(anchor!.subject, /KNS Test STI Root/)
  const leafFile = join(pki.dir, 'spc.pem')
  const refused = await runKns(['shaken', 'trust', 'add', leafFile], fresh.env)
  assert.equal(refused.code, 2)
  assert.match(refused.stderr, /not a CA certificate/)
  const listed = oneJson(await runKns(['shaken', 'trust', 'list', '--json'], fresh.env))
  assert.deepEqual((listed.anchors as Array<{ fingerprint: string; source: string }>).map((a) => [a.fingerprint, a.source]), [[anchor!.fingerprint, 'database']])
  assert.equal((await runKns(['shaken', 'trust', 'remove', anchor!.fingerprint], fresh.env)).code, 0)
  assert.deepEqual(oneJson(await runKns(['shaken', 'trust', 'list', '--json'], fresh.env)).anchors, [])
  assert.equal((await runKns(['shaken', 'trust', 'remove', anchor!.fingerprint], fresh.env)).code, 1)
})

test('crl-signer add (a certificate that is not a CA), list, remove', async () => {
  const file = join(pki.dir, 'crlSigner.pem')
  const added = oneJson(await runKns(['shaken', 'crl-signer', 'add', file, '--json'], fresh.env))
  const [signer] = added.added as Array<{ fingerprint: string; subject: string }>
  assert.match(signer!.subject, /STI-PA CRL Signer/)
  const listed = oneJson(await runKns(['shaken', 'crl-signer', 'list', '--json'], fresh.env))
  assert.deepEqual((listed.crlSigners as Array<{ fingerprint: string }>).map((a) => a.fingerprint), [signer!.fingerprint])
  const notSigner = await runKns(['shaken', 'crl-signer', 'add', join(pki.dir, 'noDigitalSignature.pem')], fresh.env)
  assert.equal(notSigner.code, 2)
  assert.match(notSigner.stderr, /not a CRL signer/)
  assert.equal((await runKns(['shaken', 'crl-signer', 'remove', signer!.fingerprint], fresh.env)).code, 0)
  assert.deepEqual(oneJson(await runKns(['shaken', 'crl-signer', 'list', '--json'], fresh.env)).crlSigners, [])
  assert.equal((await runKns(['shaken', 'crl-signer', 'remove', signer!.fingerprint], fresh.env)).code, 1)
})

test('credential add (the key never shown), list, remove; a key that is not the certificate\'s is refused', async () => {
  const key = join(pki.dir, 'spc.key')
  const chain = join(pki.dir, 'spc-bundle.pem')
  writeFileSync(chain, pki.leaves.spc.bundle)
  const args = ['shaken', 'credential', 'add', '--name', 'carrier', '--key', key, '--cert', chain, '--x5u', 'https://certs.carrier.example/spc.pem']
  const added = await runKns([...args, '--json'], fresh.env)
  assert.equal(added.code, 0, added.stderr)
  const credential = oneJson(added)
  assert.equal(credential.name, 'carrier')
  assert.match(String(credential.chainUrl), /\/shaken\/certs\/carrier\.pem$/)
  assert.doesNotMatch(added.stdout + added.stderr, /PRIVATE KEY/)
  assert.equal((await runKns(args, fresh.env)).code, 1, 'the name is taken')
  const wrongKey = await runKns(['shaken', 'credential', 'add', '--name', 'other', '--key', join(pki.dir, 'range.key'), '--cert', chain, '--x5u', 'https://certs.carrier.example/x.pem'], fresh.env)
  assert.equal(wrongKey.code, 2)
  assert.match(wrongKey.stderr, /not the key of the first certificate/)
  const listed = oneJson(await runKns(['shaken', 'credential', 'list', '--json'], fresh.env))
  assert.deepEqual((listed.credentials as Array<{ name: string }>).map((c) => c.name), ['carrier'])
  assert.equal((await runKns(['shaken', 'credential', 'remove', 'carrier'], fresh.env)).code, 0)
})
