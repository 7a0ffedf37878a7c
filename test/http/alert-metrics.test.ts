/**
 * What operators alert on, as /metrics counts it (issue 33, item 2), driven by real requests:
 * a SHAKEN signature (by credential), a call verification that passes and one that fails (by
 * verstat and failure code), and a webhook delivery to an endpoint answering 500 (failed
 * attempts by reason), which the server also logs as a warning without the URL or the secret.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { Writable } from 'node:stream'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { cancelApproval } from '../../src/approvals/cancel-approval.ts'
import { addCredential } from '../../src/caller/shaken/credentials.ts'
import { addSubscription } from '../../src/events/webhooks/subscriptions.ts'
import { buildApp } from '../../src/http/app.ts'
import { createApiKey } from '../../src/keys/api-keys.ts'
import { SealedBox } from '../../src/lib/sealed-box.ts'
import { parseRequest } from '../../src/sip/message.ts'
import { redirect, type RedirectPolicy } from '../../src/sip/redirect.ts'
import { openService, type Service } from '../../src/service.ts'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { approvalBody, newKeypair, ownedToken, createApproval } from '../support/kns.ts'
import { sampleValue } from '../support/metrics.ts'
import { until } from '../support/until.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'
import { startX5uServer, type X5uServer } from '../support/x5u-server.ts'

let x5u: X5uServer
let fresh: TestEnv
let service: Service
let app: FastifyInstance
let receiver: WebhookReceiver
let signer: string
let verifier: string
/** The server's log lines (warn and above), as JSON. */
const logLines: Array<Record<string, unknown>> = []

before(async () => {
  x5u = await startX5uServer()
  const { pki } = x5u
  fresh = await freshDatabaseEnv({
    STI_TRUST_ANCHORS: `${pki.dir}/root.pem`, X5U_ALLOW_PRIVATE: 'true', STI_CRL: 'off',
    WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_TIMEOUT_MS: '2000',
  })
  service = await openService(fresh.config, { x5uTlsCa: pki.tls.ca })
  service.events.start()
  const stream = new Writable({ write(chunk: Buffer, _enc, done) { logLines.push(JSON.parse(chunk.toString())); done() } })
  app = await buildApp(service, { logger: { level: 'warn', stream } })
  await app.ready()
  await addCredential(service.db, new SealedBox(service.secret, 'shaken-credentials'),
    { name: 'carrier', keyPem: pki.leaves.spc.key, chainPem: pki.leaves.spc.bundle, x5u: x5u.certUrl('spc') }, { allowPrivate: true, allowHttp: false })
  service.shakenCredentials.invalidate()
  const key = (scopes: Parameters<typeof createApiKey>[1]['scopes'], signing?: Parameters<typeof createApiKey>[1]['signing']) =>
    createApiKey(service.db, { vendor: 'Carrier SBC', scopes, rate: 100_000, ...(signing === undefined ? {} : { signing }) })
  signer = (await key(['signing'], { credentials: ['carrier'], attest: ['A', 'B', 'C'], numbers: null })).key
  verifier = (await key(['caller'])).key
  // A token in the URL's query, as some vendors' endpoints have: never to be logged.
  receiver = await startWebhookReceiver('/hooks/kns?token=hunter2')
})
after(async () => {
  await receiver?.close()
  await app?.close()
  await service?.close()
  await fresh?.cleanup()
  await x5u?.close()
})

const scrape = async () => (await app.inject({ method: 'GET', url: '/metrics' })).body

test('SHAKEN: a signature counts for its credential; a verification that passes and one that fails count by verstat and code', async () => {
  const before = await scrape()
  // The credential is known before it signs anything: its series exist at 0.
  assert.equal(sampleValue(before, 'kns_shaken_signatures_total', { credential: 'carrier', ppt: 'shaken' }), 0)
  assert.equal(sampleValue(before, 'kns_shaken_signatures_total', { credential: 'carrier', ppt: 'div' }), 0)
  const passed = { verstat: 'TN-Validation-Passed', code: 'none' }
  const passedBefore = sampleValue(before, 'kns_call_verifications_total', passed)
  assert.equal(passedBefore, 0)

  const signed = await app.inject({
    method: 'POST', url: '/stir/v1/signing', headers: { 'x-api-key': signer },
    payload: { signingRequest: { orig: { tn: '12025550142' }, dest: { tn: ['14155550199'] }, attest: 'A', iat: Math.floor(Date.now() / 1000), origid: randomUUID() } },
  })
  assert.equal(signed.statusCode, 200, signed.body)
  const identity = signed.json().signingResponse.identity as string
  const verify = (payload: object) => app.inject({ method: 'POST', url: '/numsys/call-signature-verification', headers: { 'x-api-key': verifier }, payload })
  const ok = await verify({ origTN: '+12025550142', destTN: '+14155550199', identity })
  assert.equal(ok.json().success, true, ok.body)
  // The same PASSporT for another called number: refused, with its code.
  const refused = await verify({ origTN: '+12025550142', destTN: '+14155550100', identity, debug: true })
  assert.equal(refused.json().success, false, refused.body)
  const code = String(refused.json().debug.reason).split(':')[0]!
  assert.match(code, /^[A-Z_]+$/)

  const after = await scrape()
  assert.equal(sampleValue(after, 'kns_shaken_signatures_total', { credential: 'carrier', ppt: 'shaken' }), 1)
  assert.equal(sampleValue(after, 'kns_call_verifications_total', passed), 1)
  const failed = { verstat: refused.json().verstat as string, code }
  assert.equal(sampleValue(after, 'kns_call_verifications_total', failed), (sampleValue(before, 'kns_call_verifications_total', failed) ?? -1) + 1,
    `${JSON.stringify(failed)} was a series at 0 before`)
  // Every failure code has its series, so a rate over any of them exists before it happens.
  assert.equal(sampleValue(after, 'kns_call_verifications_total', { verstat: 'No-TN-Validation', code: 'NO_TRUSTED_KEY' }), 0)

  // The SIP interface counts alike: an INVITE verified (302 with verstat) and one signed.
  const policy: RedirectPolicy = { block: new Set(), redress: null, signingBinding: async () => ({ credentials: ['carrier'], attest: ['A', 'B', 'C'], numbers: null }) }
  const invite = (uri: string, extra: string[]) => parseRequest(Buffer.from([
    `INVITE ${uri} SIP/2.0`, 'Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-metrics', 'From: <sip:+12025550142@127.0.0.1>;tag=1',
    'To: <sip:+14155550199@127.0.0.1>', 'Call-ID: metrics-1', 'CSeq: 1 INVITE', ...extra, 'Content-Length: 0', '', '',
  ].join('\r\n')))!
  const verified = await redirect(service, policy, invite('sip:+14155550199@127.0.0.1;user=phone;sti=vs', [`Identity: ${identity}`]), '127.0.0.1')
  assert.match(verified.headers.find(([name]) => name === 'P-Asserted-Identity')![1], /verstat=TN-Validation-Passed/)
  const sipSigned = await redirect(service, policy, invite('sip:+14155550199@127.0.0.1;user=phone;sti=as', ['Attestation-Info: A']), '127.0.0.1')
  assert.equal(sipSigned.status, 302, JSON.stringify(sipSigned))
  const afterSip = await scrape()
  assert.equal(sampleValue(afterSip, 'kns_call_verifications_total', passed), 2)
  assert.equal(sampleValue(afterSip, 'kns_shaken_signatures_total', { credential: 'carrier', ppt: 'shaken' }), 2)
})

test('a webhook endpoint answering 500: failed attempts by reason, and a warning per attempt without the URL or the secret', async () => {
  const vendor = await createApiKey(service.db, { vendor: 'Acme Bank', scopes: ['approvals'], rate: 100_000 })
  const subscription = await addSubscription(service.db, service.events.box, { keyId: vendor.id, url: receiver.url }, { allowPrivate: true })
  receiver.secret = subscription.secret
  receiver.respond = (_delivery, res) => { res.writeHead(500, { 'content-type': 'text/plain' }).end('database on fire') }
  const before = sampleValue(await scrape(), 'kns_webhook_failed_attempts_total', { reason: 'http_5xx' })
  assert.equal(before, 0)

  const token = await ownedToken({ service, app } as never, newKeypair())
  const ref = await createApproval({ service, app } as never, vendor.key, approvalBody({ phoneNumber: token.phoneNumber }))
  await cancelApproval(service.db, ref)
  await until(async () => (sampleValue(await scrape(), 'kns_webhook_failed_attempts_total', { reason: 'http_5xx' }) ?? 0) >= 2)

  const warnings = logLines.filter((line) => line.webhook === subscription.id)
  assert.ok(warnings.length >= 2, `a warning per failed attempt, got ${JSON.stringify(warnings)}`)
  const [first, second] = warnings
  assert.equal(first!.level, 40, 'warn')
  assert.equal(first!.status, 500)
  assert.equal(first!.reason, 'http_5xx')
  assert.equal(first!.attempt, 1)
  assert.equal(second!.attempt, 2)
  assert.match(String(first!.eventId), /^evt_[0-9a-f]{32}$/)
  assert.match(String(first!.nextAttemptAt), /^\d{4}-\d\d-\d\dT/)
  assert.match(String(first!.msg), /webhook delivery attempt failed; retrying at /)
  const logged = JSON.stringify(warnings)
  for (const secret of [receiver.url, 'hunter2', subscription.secret, 'database on fire']) assert.ok(!logged.includes(secret), `the log holds ${secret}`)
})
