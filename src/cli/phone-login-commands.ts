/**
 * `kns phone-login`: what the approval page's "Approve with your phone number" does, from the
 * command line and over HTTP only (as any client of the server would): log in to the service's
 * OpenID provider with a number and the code texted to it, get the salt and the proof, and
 * sign approvals as the number's phone-login address with an ephemeral key. For trying the
 * owner's side without a browser (the README's tour) and for operators checking a deployment.
 *
 * Between the steps the login waits in a session file (`--session`, default
 * `$DATA_DIR/phone-login.json`, mode 0600): it holds the ephemeral secret key and the
 * id_token, so it is as sensitive as a wallet's key until its max epoch passes.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import {
  computeZkLoginAddressFromSeed, decodeJwt, genAddressSeed, generateNonce, generateRandomness, getExtendedEphemeralPublicKey, getZkLoginSignature,
} from '@mysten/sui/zklogin'
import { ledgerApproveMessage } from '../ledger/approve.ts'
import type { ZkLoginProofShape } from '../ledger/zklogin/clear-proof.ts'
import type { Service } from '../service.ts'
import { optional, required, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'
import { e164Value, objectIdValue } from './values.ts'

export const PHONE_LOGIN_OPTIONS = { url: { type: 'string' }, code: { type: 'string' }, session: { type: 'string' } } as const

export const PHONE_LOGIN_USAGE = `  phone-login send-code --phone <+E164> [--url <server>] [--session <file>]
                                          start logging in as the number's owner: a code is texted to it
                                          (SMS_DELIVERY=log: it is in the server's log); --url default KNS_URL, else PUBLIC_BASE_URL;
                                          --session default $DATA_DIR/phone-login.json (mode 0600: the ephemeral key)
  phone-login finish --code <6 digits> [--session <file>]
                                          the code; then the salt and the proof: prints the phone-login address
  phone-login sign-approval --ref <approvalNumber> [--session <file>]   zkLogin signature for verify_signature
  phone-login sign-ledger-approve --object-id <id> --ref <n> [--session <file>]
                                          zkLogin signature for POST /ledger/v1/approve
  phone-login logout [--session <file>]   forget the login (its ephemeral key) now`

/** Epochs past the current one the ephemeral key stays valid (as the approval page). */
const EPOCHS_AHEAD = 2

interface Session {
  base: string
  mount: string
  redirectUri: string
  phone: string
  state: string
  secretKey: string
  maxEpoch: number
  randomness: string
  /** While logging in: the provider's interaction and its cookies. */
  uid?: string
  cookies?: Record<string, string>
  /** After logging in. */
  idToken?: string
  salt?: string
  proof?: ZkLoginProofShape
  addressSeed?: string
  address?: string
}

/** A cookie jar over fetch with redirects by hand: the provider ties a login to its cookies. */
class Client {
  readonly session: Session
  constructor(session: Session) {
    this.session = session
  }

  async request(path: string, init: { method?: string; body?: unknown } = {}): Promise<Response> {
    const url = new URL(path, this.session.base).href
    const headers: Record<string, string> = { accept: 'application/json' }
    if (init.body !== undefined) headers['content-type'] = 'application/json'
    const cookies = Object.entries(this.session.cookies ?? {})
    if (cookies.length > 0) headers.cookie = cookies.map(([k, v]) => `${k}=${v}`).join('; ')
    const res = await fetch(url, {
      method: init.method ?? 'GET', headers, redirect: 'manual', signal: AbortSignal.timeout(30_000),
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    })
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq).trim()
      const value = pair!.slice(eq + 1).trim()
      this.session.cookies ??= {}
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) delete this.session.cookies[name]
      else this.session.cookies[name] = value
    }
    return res
  }

  async json<T>(path: string, body?: unknown, expected = 200): Promise<T> {
    const res = await this.request(path, body === undefined ? {} : { method: 'POST', body })
    const answer = await res.json().catch(() => null) as (T & { error?: string; code?: string }) | null
    if (res.status !== expected) throw new Error(`${path.split('?')[0]}: ${res.status} ${answer?.code ?? ''} ${answer?.error ?? ''}`.trim())
    return answer as T
  }

  /** Follows the provider's redirects from `path`; returns the first Location that is not this server's provider. */
  async follow(path: string, stop: (location: URL) => boolean): Promise<URL> {
    let current = new URL(path, this.session.base)
    for (let hops = 0; hops < 10; hops++) {
      const res = await this.request(current.href)
      const location = res.headers.get('location')
      if (location === null) throw new Error(`${current.pathname}: ${res.status} without a redirect (${(await res.text()).slice(0, 200)})`)
      current = new URL(location, current)
      if (stop(current)) return current
      // A redirect names the public URL; keep talking to the server we were given.
      current = new URL(current.pathname + current.search, this.session.base)
    }
    throw new Error('the provider redirected too many times')
  }
}

function sessionPath(service: Service, values: Parsed['values']): string {
  return optional(values, 'session') ?? join(service.config.dataDir, 'phone-login.json')
}

function save(path: string, session: Session): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, `${JSON.stringify(session)}\n`, { mode: 0o600 })
  chmodSync(path, 0o600)
}

function load(path: string): Session {
  if (!existsSync(path)) throw new UsageError(`no phone login in ${path}: run 'kns phone-login send-code --phone <+E164>' first`)
  return JSON.parse(readFileSync(path, 'utf8')) as Session
}

async function sendCode(service: Service, values: Parsed['values'], out: Output): Promise<void> {
  const phone = e164Value(required(values, 'phone'), '--phone')
  const base = (optional(values, 'url') ?? process.env.KNS_URL ?? service.config.publicBaseUrl).replace(/\/+$/, '')
  const ephemeral = new Ed25519Keypair()
  const session: Session = {
    base, mount: service.accounts.provider.mountPath, redirectUri: `${service.config.publicBaseUrl}/approve`, phone,
    state: randomBytes(16).toString('base64url'), secretKey: ephemeral.getSecretKey(), maxEpoch: 0, randomness: String(generateRandomness()),
  }
  const client = new Client(session)
  const { epoch, maxEpochAhead } = await client.json<{ epoch: number; maxEpochAhead: number }>('/zklogin/v1/epoch')
  session.maxEpoch = epoch + Math.min(EPOCHS_AHEAD, maxEpochAhead)
  const query = new URLSearchParams({
    client_id: service.config.zkLoginClientId, redirect_uri: session.redirectUri, response_type: 'id_token', scope: 'openid', prompt: 'login',
    nonce: generateNonce(ephemeral.getPublicKey(), session.maxEpoch, session.randomness), state: session.state,
  })
  const interaction = `${session.mount}/interaction/`
  const login = await client.follow(`${session.mount}/auth?${query}`, (location) => location.pathname.startsWith(interaction))
  if (!login.pathname.startsWith(interaction)) throw new Error(`the provider did not ask for a login: ${login.href}`)
  session.uid = login.pathname.slice(interaction.length)
  const sent = await client.json<{ sentTo: string; expiresInS: number }>(`${interaction}${session.uid}/code`, { phoneNumber: phone }, 202)
  const path = sessionPath(service, values)
  save(path, session)
  out.result({ sentTo: sent.sentTo, expiresInS: sent.expiresInS, session: path },
    `a code was texted to ${sent.sentTo} if it has an account (valid ${sent.expiresInS / 60} min; SMS_DELIVERY=log: see the server's log)\n` +
    `then: kns phone-login finish --code <6 digits>`)
}

async function finish(service: Service, values: Parsed['values'], out: Output): Promise<void> {
  const code = required(values, 'code')
  if (!/^\d{6}$/.test(code)) throw new UsageError('--code is the 6 digits of the text message')
  const path = sessionPath(service, values)
  const session = load(path)
  if (session.uid === undefined) throw new UsageError('this login is finished already: send a new code to log in again')
  const client = new Client(session)
  const { redirectTo } = await client.json<{ redirectTo: string }>(`${session.mount}/interaction/${session.uid}/login`, { code })
  const back = await client.follow(redirectTo, (location) => location.href.startsWith(session.redirectUri))
  const answer = new URLSearchParams(back.hash.slice(1))
  if (answer.get('state') !== session.state) throw new Error('the provider answered with another state: start again')
  const idToken = answer.get('id_token')
  if (idToken === null) throw new Error(`the login did not finish: ${answer.get('error') ?? 'no id_token'} ${answer.get('error_description') ?? ''}`.trim())
  const { salt } = await client.json<{ salt: string }>('/zklogin/v1/salt', { token: idToken })
  const ephemeral = Ed25519Keypair.fromSecretKey(session.secretKey)
  const proof = await client.json<ZkLoginProofShape>('/zklogin/v1/prove', {
    jwt: idToken, extendedEphemeralPublicKey: getExtendedEphemeralPublicKey(ephemeral.getPublicKey()),
    maxEpoch: session.maxEpoch, jwtRandomness: session.randomness, salt, keyClaimName: 'sub',
  })
  const claims = decodeJwt(idToken)
  const seed = genAddressSeed(BigInt(salt), 'sub', claims.sub, claims.aud)
  const address = computeZkLoginAddressFromSeed(seed, claims.iss, false)
  delete session.uid
  delete session.cookies
  Object.assign(session, { idToken, salt, proof, addressSeed: seed.toString(), address })
  save(path, session)
  out.result({ address, phone: session.phone, maxEpoch: session.maxEpoch, session: path },
    `logged in as ${session.phone}: phone-login address ${address} (signs until epoch ${session.maxEpoch})`)
}

async function sign(session: Session, text: string): Promise<string> {
  if (session.proof === undefined || session.addressSeed === undefined) throw new UsageError('not logged in yet: run \'kns phone-login finish --code <6 digits>\'')
  const ephemeral = Ed25519Keypair.fromSecretKey(session.secretKey)
  const { signature: userSignature } = await ephemeral.signPersonalMessage(new TextEncoder().encode(text))
  return getZkLoginSignature({ inputs: { ...session.proof, addressSeed: session.addressSeed }, maxEpoch: String(session.maxEpoch), userSignature })
}

/** kns phone-login send-code | finish | sign-approval | sign-ledger-approve */
export async function phoneLoginCommand(service: Service, sub: string | undefined, { values }: Parsed, out: Output): Promise<void> {
  if (sub === 'send-code') return sendCode(service, values, out)
  if (sub === 'finish') return finish(service, values, out)
  if (sub === 'sign-approval') {
    const ref = required(values, 'ref')
    const session = load(sessionPath(service, values))
    // The text to sign, as the server shows it (its public URL is in it).
    const details = await new Client(session).json<{ signMessage: string }>(`/numsys/transaction_details?ref=${encodeURIComponent(ref)}`)
    const signature = await sign(session, details.signMessage)
    return out.result({ signature, address: session.address, approvalNumber: ref }, signature)
  }
  if (sub === 'sign-ledger-approve') {
    const objectId = objectIdValue(required(values, 'object-id'), '--object-id')
    const ref = required(values, 'ref')
    const session = load(sessionPath(service, values))
    const signature = await sign(session, ledgerApproveMessage(objectId, ref))
    return out.result({ signature, address: session.address }, signature)
  }
  if (sub === 'logout') {
    const path = sessionPath(service, values)
    rmSync(path, { force: true })
    return out.result({ removed: path }, `removed ${path}`)
  }
  throw new UsageError(`unknown command 'kns phone-login ${sub ?? ''}'`)
}
