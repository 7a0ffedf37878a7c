/**
 * "Approve with your phone number" on the embedded ledger (issue "Phone-number login"): the time
 * from "send code" to "approved", as the approval page goes through it over real HTTP: send the
 * code, log in with it, back to the client with the id_token, salt, proof (the clear proof),
 * a zkLogin signature and verify_signature. The text itself goes to a local SMSC; the time spent
 * waiting for it is measured and taken out (a real SMS takes seconds, which no server decides).
 * Baseline in the same run: a wallet's approval (an Ed25519 signature, verify_signature).
 *
 *   node bench/phone-login.bench.ts        BENCH_LOGINS (30) logins, sequential
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { genAddressSeed, generateNonce, generateRandomness, getExtendedEphemeralPublicKey, getZkLoginSignature } from '@mysten/sui/zklogin'
import { decodeJwt } from 'jose'
import { approvalBody, ownedToken, post, randomPhone, register } from '../test/support/kns.ts'
import { Browser, codeSentTo, startLoginServer, type LoginServer } from '../test/support/login.ts'

const COUNT = Number(process.env.BENCH_LOGINS ?? 30)
const log = (line: string) => process.stderr.write(`${line}\n`)

async function approval(server: LoginServer, key: string, phoneNumber: string): Promise<{ ref: string; signMessage: string }> {
  const res = await post(server.h, '/numsys/approval-phone', approvalBody({ phoneNumber }), { 'x-api-key': key })
  const ref = (res.json() as { approvalNumber: string }).approvalNumber
  const details = (await server.h.app.inject({ method: 'GET', url: `/numsys/transaction_details?ref=${ref}` })).json() as { signMessage: string }
  return { ref, signMessage: details.signMessage }
}

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`)
  return await res.json() as T
}

/** One owner's approval by phone; returns [total ms, ms waiting for the text]. */
async function byPhone(server: LoginServer, key: string): Promise<[number, number]> {
  const user = await register(server.h, randomPhone())
  const request = await approval(server, key, user.phoneNumber)
  // Before "send code": the page's ephemeral key and nonce, the authorization request, the login page.
  const ephemeral = new Ed25519Keypair()
  const { epoch } = await (await fetch(`${server.base}/zklogin/v1/epoch`)).json() as { epoch: number }
  const maxEpoch = epoch + 2
  const randomness = generateRandomness()
  const browser = new Browser()
  const auth = new URL(`${server.issuer}/auth`)
  auth.search = new URLSearchParams({
    client_id: server.h.service.config.zkLoginClientId, redirect_uri: `${server.base}/approve`, response_type: 'id_token', scope: 'openid',
    nonce: generateNonce(ephemeral.getPublicKey(), maxEpoch, randomness), state: 's', prompt: 'login',
  }).toString()
  const atLogin = await browser.follow(auth.href, server.base)
  const uid = /\/interaction\/([^/?#]+)$/.exec(new URL(atLogin.url).pathname)![1]!

  const started = performance.now()
  const submits = server.smsc.submits.length
  const sent = await browser.json(`${server.base}/oidc/interaction/${uid}/code`, { phoneNumber: user.phoneNumber })
  if (sent.status !== 202) throw new Error(`send code: ${sent.status}`)
  const waitStart = performance.now()
  const code = await codeSentTo(server.smsc, user.phoneNumber, submits)
  const waited = performance.now() - waitStart
  const login = await browser.json(`${server.base}/oidc/interaction/${uid}/login`, { code })
  const back = await browser.follow(new URL(String(login.body.redirectTo), server.base).href, server.base)
  const idToken = new URLSearchParams(new URL(back.url).hash.slice(1)).get('id_token')!
  const { salt } = await postJson<{ salt: string }>(`${server.base}/zklogin/v1/salt`, { token: idToken })
  const proof = await postJson<Parameters<typeof getZkLoginSignature>[0]['inputs']>(`${server.base}/zklogin/v1/prove`, {
    jwt: idToken, extendedEphemeralPublicKey: getExtendedEphemeralPublicKey(ephemeral.getPublicKey()), maxEpoch, jwtRandomness: randomness, salt, keyClaimName: 'sub',
  })
  const claims = decodeJwt(idToken)
  const addressSeed = genAddressSeed(BigInt(salt), 'sub', claims.sub!, claims.aud as string).toString()
  const { signature: userSignature } = await ephemeral.signPersonalMessage(new TextEncoder().encode(request.signMessage))
  const signature = getZkLoginSignature({ inputs: { ...proof, addressSeed }, maxEpoch: String(maxEpoch), userSignature })
  const verdict = await postJson<{ success: boolean }>(`${server.base}/numsys/verify_signature`, { approvalNumber: request.ref, signature })
  if (!verdict.success) throw new Error(`not approved: ${JSON.stringify(verdict)}`)
  return [performance.now() - started, waited]
}

/** The baseline: a wallet-owned token's approval, signed by the wallet and verified. */
async function byWallet(server: LoginServer, key: string): Promise<number> {
  const owner = new Ed25519Keypair()
  const token = await ownedToken(server.h, owner)
  const request = await approval(server, key, token.phoneNumber)
  const started = performance.now()
  const { signature } = await owner.signPersonalMessage(new TextEncoder().encode(request.signMessage))
  const verdict = await postJson<{ success: boolean }>(`${server.base}/numsys/verify_signature`, { approvalNumber: request.ref, signature })
  if (!verdict.success) throw new Error('wallet approval refused')
  return performance.now() - started
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const ms = (n: number) => n.toFixed(1)

const server = await startLoginServer({ LOGIN_SENDS_PER_IP: '100000', LOGIN_SENDS_PER_PREFIX: '100000' })
try {
  const key = await server.h.key()
  const phone: number[] = []
  const waits: number[] = []
  const wallet: number[] = []
  // Alternated, so that both see the same machine.
  for (let i = 0; i < COUNT; i++) {
    const [total, waited] = await byPhone(server, key)
    phone.push(total - waited)
    waits.push(waited)
    wallet.push(await byWallet(server, key))
  }
  log(`engine ${server.h.service.db.engine}, ${COUNT} approvals each`)
  log('| path | median ms | min | max | ratio to the wallet |')
  log('|---|---|---|---|---|')
  log(`| wallet: sign + verify_signature (baseline) | ${ms(median(wallet))} | ${ms(Math.min(...wallet))} | ${ms(Math.max(...wallet))} | 1 |`)
  log(`| phone: send code -> approved, without the text's wait | ${ms(median(phone))} | ${ms(Math.min(...phone))} | ${ms(Math.max(...phone))} | ${(median(phone) / median(wallet)).toFixed(1)} |`)
  log(`| (the wait for the local SMSC's text, taken out) | ${ms(median(waits))} | ${ms(Math.min(...waits))} | ${ms(Math.max(...waits))} | - |`)
} finally {
  await server.close()
}
