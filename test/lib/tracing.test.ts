/**
 * Traces (src/lib/tracing.ts), end to end: a real `kns serve` exporting to a local OTLP/HTTP
 * receiver (OTEL_EXPORTER_OTLP_PROTOCOL=http/json: OTLP's JSON encoding, so the receiver needs
 * no protobuf decoder; the SDK's default is http/protobuf, the same spans), with short batch
 * delays; the test polls what arrived. Checked: the span tree of a call verification that
 * fetches its x5u certificate (the caller's traceparent honoured, the fetch a child that sends
 * traceparent) and of an approval whose decision sends a webhook (the delivery, made later by
 * the delivery worker, in the decision's trace, the endpoint getting traceparent); trace_id on
 * the log lines; and a server without an endpoint loading nothing of the SDK.
 */
import assert from 'node:assert/strict'
import { createPrivateKey, randomBytes, randomUUID } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createSocket } from 'node:dgram'
import { request } from 'node:http'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { CompactSign } from 'jose'
import { createApiKey } from '../../src/keys/api-keys.ts'
import type { LocalLedger } from '../../src/ledger/local-ledger.ts'
import { openService } from '../../src/service.ts'
import { ENGINE, freshDatabaseEnv, type TestEnv } from '../helpers.ts'
import { approvalBody } from '../support/kns.ts'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts'
import { freePort, killAll, postJson, ROOT, startServer, type RunningServer } from '../support/process.ts'
import { until } from '../support/until.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'
import { startX5uServer, type X5uServer } from '../support/x5u-server.ts'

const ORIG = '+12025550142'
const DEST = '+14155550199'
const RECORD_IMPORTS = join(ROOT, 'test', 'support', 'record-otel-imports.ts')

let otlp: OtlpReceiver
let x5u: X5uServer
let hooks: WebhookReceiver
let fresh: TestEnv
let server: RunningServer
let key: string
let keyId: string
let owner: Ed25519Keypair
let tokenId: string
let sipPort: number

before(async () => {
  ;[otlp, x5u, hooks] = await Promise.all([startOtlpReceiver(), startX5uServer(), startWebhookReceiver()])
  const tlsCa = join(x5u.pki.dir, 'tls-ca.pem')
  writeFileSync(tlsCa, x5u.pki.tls.ca)
  fresh = await freshDatabaseEnv({
    PUBLIC_BASE_URL: 'https://kns.example.com', KNS_SECRET: randomBytes(32).toString('hex'), LOG_LEVEL: 'info',
    STI_TRUST_ANCHORS: join(x5u.pki.dir, 'root.pem'), X5U_ALLOW_PRIVATE: 'true', NODE_EXTRA_CA_CERTS: tlsCa,
    WEBHOOK_ALLOW_PRIVATE: 'true',
  })
  const seed = await openService(fresh.config, { watchChanges: false })
  try {
    const created = await createApiKey(seed.db, { vendor: 'Acme Bank', scopes: ['approvals', 'caller', 'webhooks'], rate: 100_000 })
    key = created.key
    keyId = created.id
    owner = new Ed25519Keypair()
    tokenId = (await (seed.ledger as LocalLedger).mintToken(owner.toSuiAddress())).objectId
  } finally {
    await seed.close()
  }
  sipPort = await freePort()
  server = await startServer({
    ...fresh.env, SIP_LISTEN: `127.0.0.1:${sipPort}`, SIP_TRUSTED_SOURCES: '127.0.0.1',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50',
    OTEL_SERVICE_NAME: 'kns-under-test',
    NODE_OPTIONS: `--import=${RECORD_IMPORTS}`, KNS_TEST_IMPORT_LOG: join(fresh.env.DATA_DIR!, 'imports-traced.log'),
  }, { timeoutMs: 120_000 })
})

after(async () => {
  await killAll()
  await Promise.all([otlp?.close(), x5u?.close(), hooks?.close()])
  await fresh?.cleanup()
})

/** A caller's own span: the parent the server's span must name. */
function callerContext(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex')
  const spanId = randomBytes(8).toString('hex')
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` }
}

const inTrace = (traceId: string) => otlp.spans.filter((s) => s.traceId === traceId)

/** The span's ancestors within what was exported, nearest first. */
function ancestors(span: ReceivedSpan, spans: ReceivedSpan[]): ReceivedSpan[] {
  const chain: ReceivedSpan[] = []
  for (let parent = spans.find((s) => s.spanId === span.parentSpanId); parent !== undefined; parent = spans.find((s) => s.spanId === parent!.parentSpanId)) {
    chain.push(parent)
  }
  return chain
}

async function spanNamed(traceId: string, name: string): Promise<ReceivedSpan> {
  await until(() => inTrace(traceId).some((s) => s.name === name), 20_000)
    .catch(() => assert.fail(`no span '${name}' in trace ${traceId}; spans of it: ${inTrace(traceId).map((s) => s.name).join(', ')}`))
  return inTrace(traceId).find((s) => s.name === name)!
}

function passport(): Promise<string> {
  const payload = { attest: 'A', dest: { tn: [DEST.slice(1)] }, iat: Math.floor(Date.now() / 1000), orig: { tn: ORIG.slice(1) }, origid: randomUUID() }
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'ES256', typ: 'passport', ppt: 'shaken', x5u: x5u.certUrl('spc') })
    .sign(createPrivateKey(x5u.pki.leaves.spc.key))
}

test(`a call verification fetching its x5u: the caller's trace continued, the fetch a child sending traceparent (${ENGINE})`, async () => {
  const caller = callerContext()
  const answer = await postJson(`${server.url}/numsys/call-signature-verification`, { origTN: ORIG, destTN: DEST, jwt: await passport() },
    { 'x-api-key': key, traceparent: caller.traceparent })
  assert.equal(answer.status, 200, JSON.stringify(answer.body))
  assert.equal(answer.body.success, true, JSON.stringify(answer.body))
  assert.equal(answer.body.trust, 'x5u')

  const request = await spanNamed(caller.traceId, 'POST /numsys/call-signature-verification')
  assert.equal(request.parentSpanId, caller.spanId, 'the server span is the child of the caller\'s')
  assert.equal(request.kind, 2, 'a server span')
  assert.equal(request.attributes['http.route'], '/numsys/call-signature-verification')
  assert.equal(request.attributes['http.response.status_code'], 200)
  assert.equal(request.resource['service.name'], 'kns-under-test', 'OTEL_SERVICE_NAME, read by the SDK')

  const fetch = await spanNamed(caller.traceId, 'GET x5u')
  assert.equal(fetch.kind, 3, 'a client span')
  assert.ok(ancestors(fetch, inTrace(caller.traceId)).includes(request), 'the fetch is under the request\'s span')
  assert.equal(fetch.attributes['server.address'], '127.0.0.1')
  assert.equal(fetch.attributes['url.path'], '/certs/spc.pem')
  assert.equal(fetch.attributes['http.response.status_code'], 200)
  const sent = x5u.requests.find((r) => r.path === '/certs/spc.pem')
  assert.equal(sent?.headers.traceparent, `00-${caller.traceId}-${fetch.spanId}-01`, 'the x5u server got the fetch span as parent')

  // Statements are spans under the request; their attributes name no values.
  const statement = inTrace(caller.traceId).find((s) => s.attributes['db.system.name'] === (ENGINE === 'postgres' ? 'postgresql' : 'sqlite'))
  assert.ok(statement !== undefined, 'the request\'s database statements are in its trace')
  assert.ok(ancestors(statement, inTrace(caller.traceId)).includes(request))
  for (const span of inTrace(caller.traceId)) {
    assert.doesNotMatch(JSON.stringify(span.attributes), /2025550142|4155550199|x-api-key|kns_/, `${span.name} names no number nor key`)
  }
})

test(`an approval whose decision sends a webhook: the delivery in the decision's trace, the endpoint getting traceparent (${ENGINE})`, async () => {
  const added = await postJson(`${server.url}/api/v1/admin/webhooks`, { keyId, url: hooks.url }, { 'x-api-key': key })
  assert.equal(added.status, 201, JSON.stringify(added.body))
  hooks.secret = String(added.body.secret)
  const created = await postJson(`${server.url}/numsys/approval-object-id`, approvalBody({ objectId: tokenId }), { 'x-api-key': key })
  assert.equal(created.status, 200, JSON.stringify(created.body))
  const ref = String(created.body.approvalNumber)
  const details = await (await fetch(`${server.url}/numsys/transaction_details?ref=${encodeURIComponent(ref)}`)).json() as { signMessage: string }
  const { signature } = await owner.signPersonalMessage(new TextEncoder().encode(details.signMessage))

  const caller = callerContext()
  const decided = await postJson(`${server.url}/numsys/verify_signature`, { approvalNumber: ref, signature }, { traceparent: caller.traceparent })
  assert.equal(decided.body.success, true, JSON.stringify(decided.body))

  const [delivery] = await hooks.waitFor(1, 20_000)
  assert.equal(delivery!.verifyError, null)
  assert.equal((delivery!.verified!.data as { approvalNumber: string }).approvalNumber, ref)
  const received = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(delivery!.headers.traceparent))
  assert.ok(received !== null, `the webhook request carries a traceparent: ${delivery!.headers.traceparent}`)
  assert.equal(received[1], caller.traceId, 'the webhook continues the decision\'s trace')

  const decision = await spanNamed(caller.traceId, 'POST /numsys/verify_signature')
  assert.equal(decision.parentSpanId, caller.spanId)
  const attempt = await spanNamed(caller.traceId, 'webhook delivery')
  const post = await spanNamed(caller.traceId, 'POST webhook')
  const spans = inTrace(caller.traceId)
  assert.ok(ancestors(attempt, spans).includes(decision), 'the delivery attempt continues the decision\'s span')
  assert.equal(post.parentSpanId, attempt.spanId, 'the webhook request is the attempt\'s child')
  assert.equal(received[2], post.spanId, 'the endpoint got the request\'s span as parent')
  assert.equal(attempt.attributes['kns.webhook.delivered'], true)
  assert.equal(post.attributes['url.path'], undefined, 'a webhook URL\'s path may carry a token: not in the span')
  assert.ok(spans.some((s) => s.name.startsWith('ledger ')), 'the decision\'s ledger reads are in its trace')

  // Every log line of the decision's request carries its trace and span.
  const lines = server.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
  const logged = lines.filter((l) => (l.req as { url?: string } | undefined)?.url === '/numsys/verify_signature')
  assert.ok(logged.length > 0, 'the request is logged')
  const requestLines = lines.filter((l) => l.reqId === logged[0]!.reqId)
  assert.ok(requestLines.length >= 2, 'incoming and completed')
  for (const line of requestLines) {
    assert.equal(line.trace_id, caller.traceId, `${String(line.msg)}: trace_id`)
    assert.equal(line.span_id, decision.spanId, `${String(line.msg)}: span_id`)
  }
})

/** An SBC's INVITE asking verification (no Identity header), over UDP; the final answer's status. */
async function inviteOverUdp(port: number): Promise<number> {
  const socket = createSocket('udp4')
  try {
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
    const branch = `z9hG4bK-trace-${randomBytes(6).toString('hex')}`
    const final = new Promise<number>((resolve) => socket.on('message', (m) => {
      const code = Number(/^SIP\/2\.0 (\d{3})/.exec(m.toString())?.[1])
      if (code >= 200) resolve(code)
    }))
    socket.send([
      `INVITE sip:${DEST}@127.0.0.1;user=phone;sti=vs SIP/2.0`, `Via: SIP/2.0/UDP 127.0.0.1:${socket.address().port};rport;branch=${branch}`,
      `From: <sip:${ORIG}@127.0.0.1>;tag=abc`, `To: <sip:${DEST}@127.0.0.1>`, `Call-ID: call-${branch}`, 'CSeq: 1 INVITE', 'Max-Forwards: 70',
      'Content-Length: 0', '', '',
    ].join('\r\n'), port, '127.0.0.1')
    return await final
  } finally {
    socket.close()
  }
}

test(`a SIP INVITE: a server span with the transport and the final status, no number (${ENGINE})`, async () => {
  const before = new Set(otlp.spans.map((s) => s.spanId))
  const status = await inviteOverUdp(sipPort)
  await until(() => otlp.spans.some((s) => s.name === 'SIP INVITE' && !before.has(s.spanId)), 20_000)
  const invite = otlp.spans.find((s) => s.name === 'SIP INVITE' && !before.has(s.spanId))!
  assert.equal(invite.kind, 2, 'a server span')
  assert.equal(invite.attributes['network.transport'], 'udp')
  assert.equal(invite.attributes['sip.response.status_code'], status)
  assert.doesNotMatch(JSON.stringify(invite.attributes), /2025550142|4155550199/)
})

test(`no OTLP endpoint: the SDK is not loaded, no trace_id logged (${ENGINE})`, async () => {
  // The traced server above, under the same recorder, did load the SDK: the recorder works.
  const tracedLog = join(fresh.env.DATA_DIR!, 'imports-traced.log')
  assert.match(readFileSync(tracedLog, 'utf8'), /@opentelemetry\/sdk-node/)
  const quietLog = join(fresh.env.DATA_DIR!, 'imports-untraced.log')
  const quiet = await startServer({
    ...fresh.env,
    // The other OTEL_* variables alone do not turn tracing on.
    OTEL_SERVICE_NAME: 'kns-under-test', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_TRACES_SAMPLER: 'always_on',
    NODE_OPTIONS: `--import=${RECORD_IMPORTS}`, KNS_TEST_IMPORT_LOG: quietLog,
  }, { timeoutMs: 120_000 })
  const caller = callerContext()
  const answer = await postJson(`${quiet.url}/numsys/call-signature-verification`, { origTN: ORIG, destTN: DEST, jwt: await passport() },
    { 'x-api-key': key, traceparent: caller.traceparent })
  assert.equal(answer.body.success, true, JSON.stringify(answer.body))
  await quiet.stop()
  // The API alone is loaded by prom-client (its exemplars), tracing or not: the SDK, its
  // exporters and resources are what must stay unloaded.
  const loaded = (existsSync(quietLog) ? readFileSync(quietLog, 'utf8') : '').split('\n').filter((url) => url !== '' && !url.includes('/@opentelemetry/api/'))
  assert.deepEqual(loaded, [], 'no OpenTelemetry SDK module loaded')
  assert.ok(quiet.stdout().includes('"msg":"incoming request"'), 'the server logged its requests')
  assert.doesNotMatch(quiet.stdout(), /trace_id|span_id/)
  assert.equal(inTrace(caller.traceId).length, 0, 'nothing exported for its requests')
})

/** A GET on a connection of its own (the kernel spreads connections over the workers), with a traceparent. */
function getOnFreshConnection(url: string, traceparent: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { connection: 'close', traceparent }, timeout: 15_000 }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('timeout', () => req.destroy(new Error('no answer')))
    req.on('error', reject)
    req.end()
  })
}

test('kns serve --workers 2: each worker starts its own SDK and exports its own spans', { skip: ENGINE !== 'postgres' && 'PostgreSQL only (--workers)' }, async () => {
  const workers = await startServer({
    ...fresh.env, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50',
  }, { args: ['--workers', '2'], timeoutMs: 120_000 })
  const traces: string[] = []
  const instances = () => new Set(otlp.spans.filter((s) => traces.includes(s.traceId)).map((s) => String(s.resource['service.instance.id'])))
  // Connections are spread by their addresses: requests until both workers have exported some.
  for (let i = 0; i < 100 && instances().size < 2; i++) {
    const caller = callerContext()
    traces.push(caller.traceId)
    assert.equal(await getOnFreshConnection(`${workers.url}/openapi.json`, caller.traceparent), 200)
    if (i % 10 === 9) await until(() => otlp.spans.some((s) => s.traceId === caller.traceId), 20_000)
  }
  await until(() => instances().size >= 2, 20_000)
  const pids = new Set(otlp.spans.filter((s) => traces.includes(s.traceId)).map((s) => s.resource['process.pid']))
  assert.equal(pids.size, 2, 'two processes exported spans')
  assert.ok(!pids.has(workers.child.pid), 'not the primary')
  for (const traceId of traces.filter((t) => inTrace(t).length > 0)) {
    assert.equal(inTrace(traceId).find((s) => s.kind === 2)?.name, 'GET /openapi.json')
  }
  await workers.stop()
})
