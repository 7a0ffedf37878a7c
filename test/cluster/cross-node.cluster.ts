/**
 * What one process never exercised (docs/cluster.md, "What holds across nodes"): a wait held on
 * one node released by a decision on another; a phone login started on one node and finished
 * on another; webhooks delivered once per event while every node claims deliveries; one ledger
 * watcher at a time, moving when its node dies, and expiries swept once whichever nodes sweep;
 * rate limits shared through Redis; a revoked key refused by every node within the documented
 * second; a SIP retransmission landing on another node answered alike. "Started on A, finished
 * on B" addresses the nodes directly; the service as a whole, through HAProxy. Root only
 * (`npm run test:cluster`, run by .ci/run); skipped elsewhere, saying why.
 */
import assert from 'node:assert/strict'
import { randomBytes, X509Certificate } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { computeZkLoginAddress } from '@mysten/sui/zklogin'
import { compactVerify, createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose'
import { claims, newSigner, shakenHeader, signRaw } from '../support/caller.ts'
import { startSmsc, type FakeSmsc } from '../support/fake-smsc.ts'
import { Browser, codeSentTo } from '../support/login.ts'
import { makeShakenPki, type ShakenPki } from '../support/shaken-pki.ts'
import { postJson, sleep } from '../support/process.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts'
import { approveAt, cancelAt, createApproval, createKey, mintToken, randomPhone, withDatabase } from './support/clients.ts'
import { BRIDGE_ADDRESS, startCluster, type Cluster } from './support/cluster.ts'
import { chownTree } from './support/hosts.ts'
import { nodeMetric, type KnsNode } from './support/kns-nodes.ts'
import { clusterUnavailable } from './support/requirements.ts'
import { addSigningCredential } from './support/signing.ts'
import { inviteFrom, sendInviteFrom, type SipFinal } from './support/sip-direct.ts'
import { waitFor } from './support/wait.ts'

const skip = clusterUnavailable()
let cluster: Cluster
let pki: ShakenPki
let smsc: FakeSmsc | undefined
let receiver: WebhookReceiver | undefined
/** The vendor's key (approvals), whose approvals' events go to `receiver`. */
let vendor: { id: string; key: string }
const CALLED = '+14155550199'
/** A number the cluster's signing key signs for (SIGNED_NUMBERS). */
const SIGNED_CALLER = '+12025550142'

before(async () => {
  if (skip !== undefined) return
  pki = makeShakenPki({ crlUrl: 'https://crl.example.com/sti-ca.crl' })
  cluster = await startCluster({
    // The receiver is on the bridge (a private address, over http): as in development.
    nodeEnv: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_BASE_MS: '500', LOGIN_RESEND_COOLDOWN_S: '0' },
    async prepare(c) {
      // The operator's SMSC and the vendor's endpoint, where the nodes reach them: the bridge address.
      smsc = await startSmsc(BRIDGE_ADDRESS)
      receiver = await startWebhookReceiver('/hooks/kns', 0, BRIDGE_ADDRESS)
      return { SMS_DELIVERY: 'smpp', SMPP_URL: smsc.url(), SMS_FROM: 'KNS', ...await addSigningCredential(c, pki) }
    },
  })
  vendor = await createKey(cluster, ['--vendor', 'Cross Bank', '--scopes', 'approvals', '--rate', '1000'])
  const webhook = await cluster.kns(['webhook', 'add', '--key', vendor.id, '--url', receiver!.url, '--json'])
  assert.equal(webhook.code, 0, webhook.stderr)
  receiver!.secret = (JSON.parse(webhook.stdout) as { secret: string }).secret
})

after(async () => {
  await cluster?.stop()
  await receiver?.close()
  await smsc?.close()
  pki?.cleanup()
})

const nodes = () => cluster.nodes as [KnsNode, KnsNode, KnsNode]
const seconds = (since: number) => (performance.now() - since) / 1000


test('a transaction_details?wait= held on kns1 and kns3 is released by a decision taken on kns2', { skip }, async (t) => {
  const [a, b, c] = nodes()
  const owner = new Ed25519Keypair()
  const { objectId } = await mintToken(cluster, owner)
  const ref = await createApproval(cluster.haproxy.httpUrl, vendor.key, objectId)
  const WAIT_S = 20
  const held = await Promise.all([a, c].map((node) => nodeMetric(node, 'kns_decision_waits')))
  const started = performance.now()
  const waits = [a, c].map(async (node) => {
    const res = await fetch(`${node.url}/numsys/transaction_details?ref=${ref}&wait=${WAIT_S}`, { signal: AbortSignal.timeout(2 * WAIT_S * 1000) })
    return { node: node.name, status: res.status, body: (await res.json()) as Record<string, unknown>, seconds: seconds(started) }
  })
  // Both waits are held (registered on their node) before anything is decided: a decision that
  // came first would be read at once and prove nothing.
  await waitFor('the waits held on kns1 and kns3', async () => {
    const now = await Promise.all([a, c].map((node) => nodeMetric(node, 'kns_decision_waits')))
    return now.every((count, i) => count > held[i]!) ? true : undefined
  }, { timeoutMs: 10_000 })
  const decidedAt = seconds(started)
  await approveAt(b.url, ref, owner)
  for (const answer of await Promise.all(waits)) {
    assert.equal(answer.status, 200, answer.node)
    assert.equal(answer.body.status, 'approved', `${answer.node}: ${JSON.stringify(answer.body)}`)
    // Answered before the wait ran out: woken by kns2's decision (NOTIFY through PostgreSQL),
    // not by its own time limit (which would also read 'approved', but after 20 s).
    assert.ok(answer.seconds < WAIT_S, `${answer.node} answered after ${answer.seconds.toFixed(1)} s: the wait ran out`)
    t.diagnostic(`${answer.node}: answered ${(answer.seconds - decidedAt).toFixed(2)} s after the decision on kns2 started (wait=${WAIT_S})`)
  }
})

test('SIP: an INVITE retransmitted to another node gets the same answer (verification passed or failed, signing)', { skip }, async () => {
  const [a, b] = nodes()
  // From Kamailio's host: the nodes answer only it (SIP_TRUSTED_SOURCES), as to an SBC behind it.
  const sbc = cluster.network.host('sip')
  // A caller whose number has a key on the ledger (a keystore linked to the number's token).
  const signer = newSigner()
  const { phoneNumber: caller } = await mintToken(cluster, new Ed25519Keypair())
  const keyFile = join(cluster.network.runDir, 'caller.pub.pem')
  writeFileSync(keyFile, signer.publicPem)
  chownTree(keyFile, cluster.app.user)
  const keystore = await cluster.kns(['keystore', 'create', '--name', 'Caller Carrier', '--creator', new Ed25519Keypair().toSuiAddress(), '--public-key', keyFile, '--json'])
  assert.equal(keystore.code, 0, keystore.stderr)
  const { objectId: keystoreId, keyId } = JSON.parse(keystore.stdout) as { objectId: string; keyId: string }
  const linked = await cluster.kns(['registry', 'link', '--phone', caller, '--keystore', keystoreId, '--json'])
  assert.equal(linked.code, 0, linked.stderr)

  const identity = `${signRaw(shakenHeader(keyId), claims(caller, CALLED), signer.privateKey)};ppt=shaken`
  const call = (from: string, headers: string[]) => inviteFrom(sbc, { dispatcher: cluster.kamailio.sipAddress, to: CALLED, from, uriParams: ';user=phone', headers })
  // To kns1, again to kns1 (not acknowledged yet: a retransmission there), then to kns2 (which never saw it).
  const steps = [{ target: a.sipAddress, ack: false }, { target: a.sipAddress, ack: true }, { target: b.sipAddress, ack: true }]
  const verstat = (final: SipFinal) => /verstat=([\w-]+)/.exec(final.headers.get('p-asserted-identity')?.[0] ?? '')?.[1]
  const sameAnswer = async (invite: string, what: string) => {
    const [first, again, elsewhere] = await sendInviteFrom(sbc, invite, steps)
    assert.ok(first !== undefined && again !== undefined && elsewhere !== undefined, `${what}: a final response from each (${[first, again, elsewhere].map((f) => f?.status)})`)
    assert.equal(again.raw, first.raw, `${what}: kns1 answers the retransmission with its answer, byte for byte`)
    assert.equal(elsewhere.status, first.status, what)
    for (const header of ['contact', 'p-asserted-identity', 'reason']) {
      assert.deepEqual(elsewhere.headers.get(header), first.headers.get(header), `${what}: ${header}`)
    }
    return [first, elsewhere] as const
  }

  const passed = await sameAnswer(call(caller, [`Identity: ${identity}`]), 'a good Identity')
  assert.deepEqual(passed.map((f) => [f.status, verstat(f)]), [[302, 'TN-Validation-Passed'], [302, 'TN-Validation-Passed']])
  const tampered = await sameAnswer(call(caller, [`Identity: ${identity.replace(/\.([\w-]{4})/, '.AAAA')}`]), 'a tampered Identity')
  assert.deepEqual(tampered.map((f) => [f.status, verstat(f)]), [[302, 'TN-Validation-Failed'], [302, 'TN-Validation-Failed']])
  assert.match(tampered[1].headers.get('reason')?.[0] ?? '', /^SIP;cause=438;/)

  // Signing: each node signs anew (its own iat and signature), for the same call: the same claims.
  const signed = await sameAnswer(call(SIGNED_CALLER, ['Attestation-Info: A']), 'a signing INVITE')
  const leaf = new X509Certificate(pki.leaves.spc.cert).publicKey
  const passports = await Promise.all(signed.map(async (final) => {
    assert.equal(final.status, 302)
    const { payload } = await compactVerify((final.headers.get('identity')?.[0] ?? '').split(';')[0]!, leaf)
    const { iat: _own, ...claimed } = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>
    return claimed
  }))
  assert.deepEqual(passports[1], passports[0], 'the same claims (orig, dest, attest, origid) from both nodes')
  assert.deepEqual([passports[0]!.orig, passports[0]!.attest], [{ tn: SIGNED_CALLER.slice(1) }, 'A'])
})

test('webhooks: decisions spread over the nodes, deliveries claimed by all: every event arrives, each under one webhook-id', { skip }, async (t) => {
  const hooks = receiver!
  // What earlier tests' decisions sent is delivered before this one counts.
  await waitFor('no delivery pending', async () => ((await nodeMetric(nodes()[0], 'kns_webhook_oldest_pending_age_seconds')) === 0 ? true : undefined), { timeoutMs: 30_000 })
  hooks.received.length = 0
  const owner = new Ed25519Keypair()
  const { objectId } = await mintToken(cluster, owner)
  // Approved, cancelled and expired, each kind on each node: 3 x 3 x PER.
  const PER = 4
  const kinds = ['approved', 'cancelled', 'expired'] as const
  const plan = Array.from({ length: 9 * PER }, (_, i) => ({ kind: kinds[i % 3]!, node: nodes()[Math.floor(i / 3) % 3]! }))
  const refs = await Promise.all(plan.map(() => createApproval(cluster.haproxy.httpUrl, vendor.key, objectId)))
  const metric = (name: string, labels: Record<string, string> = {}) => Promise.all(nodes().map((node) => nodeMetric(node, name, labels)))
  const deliveredBefore = await metric('kns_webhook_deliveries_total', { result: 'delivered' })
  const expiredBefore = await metric('kns_approvals_expired_total')
  const expiring = refs.filter((_, i) => plan[i]!.kind === 'expired')
  // The expiries first (due now: every node's sweeper races for them), then the decisions, at once.
  await withDatabase(cluster, (db) => db.query('UPDATE approvals SET expires_at = $1 WHERE approval_number = ANY($2)', [Date.now() - 1000, expiring]))
  await Promise.all(plan.map(({ kind, node }, i) =>
    kind === 'approved' ? approveAt(node.url, refs[i]!, owner) : kind === 'cancelled' ? cancelAt(node.url, refs[i]!) : undefined))

  const byApproval = new Map<string, Set<string>>()
  await waitFor('every event delivered', async () => {
    for (const delivery of hooks.received) {
      const ref = (delivery.verified?.data as { approvalNumber?: string } | undefined)?.approvalNumber ?? '?'
      byApproval.set(ref, (byApproval.get(ref) ?? new Set()).add(delivery.id))
    }
    return refs.every((ref) => byApproval.has(ref)) ? true : undefined
  }, { timeoutMs: 60_000, diagnostics: () => `${byApproval.size} of ${refs.length} approvals heard of` })
  // Late duplicates (a claim that ran out and was taken again) would come within seconds.
  await sleep(3000)
  const deliveries = hooks.received.filter((d) => refs.includes((d.verified?.data as { approvalNumber?: string } | undefined)?.approvalNumber ?? ''))
  assert.equal(deliveries.length, hooks.received.length, 'no delivery of anything else')
  for (const delivery of deliveries) assert.equal(delivery.verifyError, null, 'standardwebhooks verifies every delivery')
  const eventIds = new Set(deliveries.map((d) => d.id))
  for (const [i, ref] of refs.entries()) {
    const ids = [...new Set(deliveries.filter((d) => (d.verified!.data as { approvalNumber: string }).approvalNumber === ref).map((d) => d.id))]
    assert.equal(ids.length, 1, `${ref} (${plan[i]!.kind} on ${plan[i]!.node.name}): one event, one webhook-id; got ${ids.join(', ')}`)
    const types = new Set(deliveries.filter((d) => d.id === ids[0]).map((d) => d.verified!.type))
    assert.deepEqual([...types], [`approval.${plan[i]!.kind}`], ref)
  }
  const stored = await withDatabase(cluster, async (db) => (await db.query<{ event_id: string }>(
    'SELECT event_id FROM approval_events WHERE approval_number = ANY($1)', [refs])).rows.map((r) => r.event_id))
  assert.deepEqual(stored.sort(), [...eventIds].sort(), 'the events delivered are the events stored, one per decision')

  const delivered = (await metric('kns_webhook_deliveries_total', { result: 'delivered' })).map((n, i) => n - deliveredBefore[i]!)
  const expired = (await metric('kns_approvals_expired_total')).map((n, i) => n - expiredBefore[i]!)
  const duplicates = deliveries.length - eventIds.size
  t.diagnostic(`${refs.length} events, ${deliveries.length} deliveries (${duplicates} duplicate${duplicates === 1 ? '' : 's'}, same webhook-id); ` +
    `delivered by kns1/kns2/kns3: ${delivered.join(' / ')}; expired by kns1/kns2/kns3: ${expired.join(' / ')}`)
  assert.equal(delivered.reduce((x, y) => x + y, 0), deliveries.length, 'every delivery counted by the node that made it')
  assert.equal(expired.reduce((x, y) => x + y, 0), expiring.length, 'each approval expired once, whichever node swept it')
  assert.ok(delivered.filter((n) => n > 0).length >= 2, `the deliveries were claimed by several nodes: ${delivered}`)
  // At least once allows a duplicate (same webhook-id) after a claim's lease ran out; here the
  // endpoint answers at once and no node is lost, so one could only come from two nodes
  // claiming the same delivery.
  assert.equal(duplicates, 0, 'no delivery claimed twice')
})

test('a phone login started on kns1 (code sent) is finished on kns2; the provider\'s keys, sessions and codes are every node\'s', { skip }, async (t) => {
  const [a, b, c] = nodes()
  const service = cluster.haproxy.httpUrl
  const issuer = `${service}/oidc`
  const phoneNumber = randomPhone()
  const registered = await postJson(`${service}/numsys/register-user-login`, { email: 'login@example.com', phoneNumber })
  assert.equal(registered.status, 200, JSON.stringify(registered.body))
  // Every node describes one provider: the same discovery document and the same keys.
  const discovery = await Promise.all(nodes().map(async (node) => (await fetch(`${node.url}/oidc/.well-known/openid-configuration`)).json()))
  assert.deepEqual(discovery[1], discovery[0])
  assert.deepEqual(discovery[2], discovery[0])
  assert.equal((discovery[0] as { issuer: string }).issuer, issuer)
  const jwksOf = async (node: KnsNode) => (await (await fetch(`${node.url}/oidc/jwks`)).json()) as JSONWebKeySet

  const browser = new Browser()
  const login = await startLogin(browser, a, 'login')
  const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(new URL(login.location).pathname)?.[1]
  assert.ok(uid !== undefined, `kns1 asks for a login: ${login.location}`)
  const texted = smsc!.submits.length
  const sent = await browser.json(`${a.url}/oidc/interaction/${uid}/code`, { phoneNumber })
  assert.equal(sent.status, 202, JSON.stringify(sent.body))
  const code = await codeSentTo(smsc!, phoneNumber, texted)
  // The code sent by kns1, entered on kns2 (the interaction, its cookie and the code are in the database).
  const entered = await browser.json(`${b.url}/oidc/interaction/${uid}/login`, { code })
  assert.equal(entered.status, 200, JSON.stringify(entered.body))
  // The provider resumes on kns3 and sends the browser back with the id_token.
  const first = await finishLogin(browser, c, String(entered.body.redirectTo), login.state)
  const salts = new Set<string>()
  for (const node of nodes()) {
    // The id_token made on kns3 verifies with every node's JWKS.
    const { payload } = await jwtVerify(first.idToken, createLocalJWKSet(await jwksOf(node)), { issuer, audience: 'kns' })
    assert.deepEqual([payload.sub, payload.phone_number, payload.nonce], [registered.body.userId, phoneNumber, login.nonce], node.name)
    const salt = await postJson(`${node.url}/zklogin/v1/salt`, { token: first.idToken })
    assert.equal(salt.status, 200, `${node.name}: ${JSON.stringify(salt.body)}`)
    salts.add(String(salt.body.salt))
  }
  assert.equal(salts.size, 1, 'one salt for the login, whichever node is asked')
  const { iss, aud, sub } = decodeJwt(first.idToken)
  assert.equal(computeZkLoginAddress({ claimName: 'sub', claimValue: sub!, iss: iss!, aud: aud as string, userSalt: BigInt([...salts][0]!), legacyAddress: false }),
    registered.body.zkAddress, 'the login is the registered zkAddress\'s')

  // The session made on kns3 logs the browser in on kns1 without a code (prompt=none); a
  // browser without it is told login_required there: the session, not the node, decides.
  const again = await startLogin(browser, a, 'none')
  const silent = await finishLogin(browser, a, again.location, again.state)
  assert.equal(decodeJwt(silent.idToken).sub, registered.body.userId)
  const stranger = await startLogin(new Browser(), a, 'none')
  assert.match(stranger.location, /[#&]error=login_required/)

  // A key rotation by the CLI on kns2's host: every node signs with the new key, soon.
  const before = await jwksOf(a)
  const rotated = await cluster.kns(['oidc', 'keys', 'rotate', '--force', '--json'], 'kns2')
  assert.equal(rotated.code, 0, rotated.stderr)
  const { signing } = JSON.parse(rotated.stdout) as { signing: string }
  const rotatedAt = performance.now()
  for (const node of [a, b, c]) {
    const kid = await waitFor(`${node.name} signs with ${signing}`, async () => {
      const next = await startLogin(browser, node, 'none')
      const token = (await finishLogin(browser, node, next.location, next.state)).idToken
      const header = decodeProtectedHeader(token)
      return header.kid === signing ? header.kid : undefined
    }, { timeoutMs: 10_000 })
    assert.equal(kid, signing)
  }
  t.diagnostic(`after the rotation every node signed with the new key within ${seconds(rotatedAt).toFixed(2)} s (the old key stays in the JWKS: ${before.keys.length} keys before)`)
})

/**
 * The built-in client's implicit id_token request at `node`, as the approval page makes it;
 * where the provider sends the browser (the interaction for a login, or straight back with
 * the id_token or an error for prompt=none).
 */
async function startLogin(browser: Browser, node: KnsNode, prompt: 'login' | 'none'): Promise<{ location: string; nonce: string; state: string }> {
  const nonce = randomBytes(16).toString('hex')
  const state = randomBytes(16).toString('hex')
  const url = new URL(`${node.url}/oidc/auth`)
  url.search = new URLSearchParams({
    client_id: 'kns', redirect_uri: `${cluster.haproxy.httpUrl}/approve`, response_type: 'id_token', scope: 'openid phone', nonce, state, prompt,
  }).toString()
  const res = await browser.fetch(url.href)
  const location = res.headers.get('location')
  assert.ok(location !== null, `${node.name}: GET /oidc/auth answered ${res.status} without a redirect: ${await res.text()}`)
  return { location: new URL(location, url).href, nonce, state }
}

/**
 * Follows the provider's redirects on `node` (the URLs it writes are the issuer's, HAProxy's:
 * the path is asked of the node) until it sends the browser back to the approval page; the
 * id_token there.
 */
async function finishLogin(browser: Browser, node: KnsNode, from: string, state: string): Promise<{ idToken: string }> {
  let location = from
  for (let hops = 0; hops < 5 && !new URL(location).pathname.startsWith('/approve'); hops++) {
    const url = new URL(location)
    const res = await browser.fetch(`${node.url}${url.pathname}${url.search}`)
    const next = res.headers.get('location')
    assert.ok(next !== null, `${node.name}: ${url.pathname} answered ${res.status}: ${await res.text()}`)
    location = new URL(next, url).href
  }
  const fragment = new URLSearchParams(new URL(location).hash.slice(1))
  assert.equal(fragment.get('state'), state, location)
  const idToken = fragment.get('id_token')
  assert.ok(idToken !== null, `an id_token: ${location}`)
  return { idToken }
}
