/**
 * A steady production mix against the cluster, as its clients would send it: vendors asking
 * for approvals (each followed by a `transaction_details?wait=` and, a moment later, the
 * owner's decision: a wallet signature, a cancel, or the owner's kns::approve on the ledger
 * that the ledger watcher turns into an approval), SBCs verifying calls (ATIS REST through
 * HAProxy, SIP INVITEs through Kamailio) and people logging in by phone (the provider's
 * interaction, the code by SMS). Open loop: each stream starts its work at a fixed rate
 * whether or not earlier work has finished, so a stalled service does not lower the load it is
 * offered. Everything is recorded (mix-records.ts).
 */
import { randomBytes, randomInt, randomUUID, sign, type KeyObject } from 'node:crypto'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { ledgerApproveMessage } from '../../../src/ledger/approve.ts'
import { clientError, newRecords, type MixRequest, type RequestKind } from './mix-records.ts'
import { SipInviteClient } from './sip-client.ts'
import type { SmsGateway } from './sms-gateway.ts'
import { sleep } from './wait.ts'

export interface MixTargets {
  /** The API as clients reach it (HAProxy). */
  apiUrl: string
  /** Kamailio's SIP address (host:port), and the SBC's own address (one Kamailio trusts: the bridge). */
  sipTarget: string
  localAddress: string
  /** An `approvals` key (its webhook receives the decisions) and a `caller` key. */
  approvalsKey: string
  callerKey: string
  /** The owner of `tokenObjectId`, the token linked to `approvalPhone`. */
  wallet: Ed25519Keypair
  approvalPhone: string
  tokenObjectId: string
  /** A caller number with a keystore linked (ledger trust), its signing key and key ID, and a called number. */
  caller: { number: string; called: string; privateKey: KeyObject; keyId: string }
  sms: SmsGateway
}

/** Starts per second of each stream. */
export interface MixRates {
  /** Approval journeys decided by the owner's signature, by a cancel, and by the owner's kns::approve. */
  signed: number
  cancelled: number
  ledger: number
  /** Call verifications: ATIS REST, and SIP INVITEs. */
  stir: number
  sip: number
  /** New users: a registration and a phone login (about seven requests). */
  login: number
}

/** About 25 requests a second in all (a journey is 3-4 requests, a new user about 7). */
export const DEFAULT_RATES: MixRates = { signed: 2, cancelled: 1, ledger: 0.5, stir: 5, sip: 5, login: 0.5 }

/** How long a `transaction_details?wait=` holds (s). */
const WAIT_S = 15
const TIMEOUT_MS = 20_000
/** An owner reads the request before deciding. */
const THINK_MS = 300
/** Past this many tasks in flight a start is skipped (counted): the client must not grow without bound while the service stalls. */
const MAX_IN_FLIGHT = 200

interface Answer { status: number; body: Record<string, unknown>; headers: Headers; request: MixRequest }

export class ProductionMix {
  readonly records = newRecords()
  /** APPROVAL_COMMIT of the nodes now (the test sets it when it restarts them). */
  commit: 'sync' | 'async' = 'sync'
  /** Starts skipped because MAX_IN_FLIGHT tasks were running. */
  skipped = 0
  readonly #targets: MixTargets
  readonly #rates: MixRates
  readonly #tasks = new Set<Promise<void>>()
  #sip: SipInviteClient | undefined
  #ticker: NodeJS.Timeout | undefined
  #sequence = 0

  constructor(targets: MixTargets, rates: MixRates = DEFAULT_RATES) {
    this.#targets = targets
    this.#rates = rates
  }

  async start(): Promise<void> {
    this.#sip = await SipInviteClient.open(this.#targets.localAddress, this.#targets.sipTarget)
    const due: Record<keyof MixRates, number> = { signed: 0, cancelled: 0, ledger: 0, stir: 0, sip: 0, login: 0 }
    const TICK_MS = 100
    this.#ticker = setInterval(() => {
      for (const stream of Object.keys(due) as Array<keyof MixRates>) {
        due[stream] += (this.#rates[stream] * TICK_MS) / 1000
        for (; due[stream] >= 1; due[stream]--) this.#launch(() => this.#run(stream))
      }
    }, TICK_MS)
  }

  /** Extra approval creations (no decision) at `perSecond` for `ms`: sharpens what a crash of the primary risks. */
  async burst(perSecond: number, ms: number): Promise<void> {
    const end = Date.now() + ms
    while (Date.now() < end) {
      this.#launch(() => this.#create('sign').then(() => {}))
      await sleep(1000 / perSecond)
    }
  }

  /** Stops starting work and waits for what is in flight (again: nothing more to do). */
  async stop(): Promise<void> {
    clearInterval(this.#ticker)
    while (this.#tasks.size > 0) await Promise.all([...this.#tasks])
    this.#sip?.close()
    this.#sip = undefined
  }

  #launch(work: () => Promise<void>): void {
    if (this.#tasks.size >= MAX_IN_FLIGHT) {
      this.skipped++
      return
    }
    const task = work().catch((err: unknown) => { console.error('production mix: a task failed unexpectedly', err) })
      .finally(() => this.#tasks.delete(task))
    this.#tasks.add(task)
  }

  #run(stream: keyof MixRates): Promise<void> {
    switch (stream) {
      case 'signed': return this.#journey('signature')
      case 'cancelled': return this.#journey('cancel')
      case 'ledger': return this.#journey('ledger')
      case 'stir': return this.#stir()
      case 'sip': return this.#sipCall()
      case 'login': return this.#login()
    }
  }

  /** A vendor asks, waits for the decision on one connection, and the owner decides on another. */
  async #journey(decision: 'signature' | 'cancel' | 'ledger'): Promise<void> {
    const approvalNumber = await this.#create(decision === 'ledger' ? 'event' : 'sign')
    if (approvalNumber === undefined) return
    const decided: { status?: 'approved' | 'cancelled'; at?: number } = {}
    const wait = this.#wait(approvalNumber, decided)
    await sleep(THINK_MS)
    if (decision === 'signature') await this.#approveBySignature(approvalNumber, decided)
    else if (decision === 'cancel') await this.#cancel(approvalNumber, decided)
    else await this.#approveOnLedger(approvalNumber, decided)
    await wait
  }

  async #create(method: 'sign' | 'event'): Promise<string | undefined> {
    const referenceNumber = `mix-${randomBytes(6).toString('hex')}`
    const answer = await this.#http('approval.create', '/numsys/approval-phone', {
      body: {
        title: 'SIM replacement', message: 'Approve the replacement of your SIM card.', successRedirectUrl: 'https://vendor.example/approved',
        cancelRedirectUrl: 'https://vendor.example/cancelled', referenceNumber, method, phoneNumber: this.#targets.approvalPhone,
      },
      headers: { 'x-api-key': this.#targets.approvalsKey },
    })
    if (answer?.status !== 200) return undefined
    const approvalNumber = String(answer.body.approvalNumber)
    this.records.approvals.push({ approvalNumber, referenceNumber, method, at: Date.now(), commit: this.commit })
    return approvalNumber
  }

  /** The vendor's wait: it must come back with the decision once one was acknowledged (a decision on any node wakes it). */
  async #wait(approvalNumber: string, decided: { status?: string; at?: number }): Promise<void> {
    await this.#http('approval.wait', `/numsys/transaction_details?ref=${approvalNumber}&wait=${WAIT_S}`, {
      timeoutMs: (WAIT_S + 10) * 1000,
      judge: (status, body) => {
        if (status !== 200) return String(body.code ?? status)
        // Acknowledged at least a second before the wait ended and still not seen: the wait was never woken.
        if (body.status === 'pending' && decided.at !== undefined && Date.now() - decided.at > 1000) return `wait not released (${decided.status} acknowledged)`
        if (body.status !== 'pending' && decided.status !== undefined && body.status !== decided.status) return `wait answered ${String(body.status)}, decided ${decided.status}`
        return undefined
      },
    })
  }

  async #approveBySignature(approvalNumber: string, decided: { status?: 'approved' | 'cancelled'; at?: number }): Promise<void> {
    const details = await this.#http('approval.details', `/numsys/transaction_details?ref=${approvalNumber}`, {})
    if (details?.status !== 200) return
    const { signature } = await this.#targets.wallet.signPersonalMessage(new TextEncoder().encode(String(details.body.signMessage)))
    await this.#decide('decision.signature', '/numsys/verify_signature', { approvalNumber, signature }, approvalNumber, 'approved', decided)
  }

  async #cancel(approvalNumber: string, decided: { status?: 'approved' | 'cancelled'; at?: number }): Promise<void> {
    await this.#decide('decision.cancel', '/numsys/approval-cancel', { approvalNumber, reason: 'denied' }, approvalNumber, 'cancelled', decided)
  }

  /**
   * A verdict (`{ success: true }`); the approval page retries what got no verdict (a 503, no
   * answer) after Retry-After, at most twice: both are idempotent.
   */
  async #decide(kind: RequestKind, path: string, body: unknown, approvalNumber: string, status: 'approved' | 'cancelled',
    decided: { status?: 'approved' | 'cancelled'; at?: number }): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const answer = await this.#http(kind, path, { body, judge: (s, b) => (s === 200 && b.success === true ? undefined : String(b.code ?? s)) })
      if (answer?.status === 200 && answer.body.success === true) {
        const at = Date.now()
        Object.assign(decided, { status, at })
        this.records.decisions.push({ approvalNumber, status, via: kind === 'decision.cancel' ? 'cancel' : 'signature', at })
        return
      }
      if (answer !== undefined && answer.status < 500) return
      await sleep(Math.min(Number(answer?.headers.get('retry-after') ?? 1) * 1000, 2000))
    }
  }

  /** The owner's kns::approve on the embedded ledger: the watcher (one node) approves the request when it reads the event. */
  async #approveOnLedger(approvalNumber: string, decided: { status?: 'approved' | 'cancelled'; at?: number }): Promise<void> {
    const { objectId } = { objectId: this.#targets.tokenObjectId }
    const { signature } = await this.#targets.wallet.signPersonalMessage(new TextEncoder().encode(ledgerApproveMessage(objectId, approvalNumber)))
    const answer = await this.#http('decision.ledger', '/ledger/v1/approve', { body: { objectId, ref: approvalNumber, signature } })
    if (answer?.status !== 200) return
    const at = Date.now()
    // The wait's "not released" check starts once the watcher could have seen it (it polls every second).
    Object.assign(decided, { status: 'approved', at: at + 2000 })
    this.records.decisions.push({ approvalNumber, status: 'approved', via: 'ledger', at })
  }

  /** An SBC's ATIS-1000082 verification of a call signed by the caller's key (ledger trust). */
  async #stir(): Promise<void> {
    const { caller } = this.#targets
    await this.#http('call.stir', '/stir/v1/verification', {
      headers: { 'x-api-key': this.#targets.callerKey },
      body: { verificationRequest: { from: { tn: caller.number.slice(1) }, to: { tn: [caller.called.slice(1)] }, time: Math.floor(Date.now() / 1000), identity: this.#identity() } },
      judge: (status, body) => {
        if (status !== 200) return String(body.code ?? status)
        const verstat = (body.verificationResponse as { verstat?: string } | undefined)?.verstat
        return verstat === 'TN-Validation-Passed' ? undefined : `verstat ${verstat}`
      },
    })
  }

  /** The same verification as an SBC's INVITE to the dispatcher, answered by a 302 carrying verstat. */
  async #sipCall(): Promise<void> {
    const { caller } = this.#targets
    const id = `mix-sip-${randomBytes(8).toString('hex')}`
    const request: MixRequest = { id, kind: 'call.sip', start: Date.now(), status: 0, byService: false }
    this.records.requests.push(request)
    const answer = await this.#sip!.invite({ to: caller.called, from: caller.number, headers: [`Identity: ${this.#identity()}`], callId: id }, 10_000)
    request.end = Date.now()
    request.status = answer.status
    const retryAfter = answer.headers.get('retry-after')?.[0]
    if (retryAfter !== undefined) request.retryAfter = retryAfter
    // Kamailio's own answers carry its Server header; a node's are relayed as they are.
    request.byService = answer.status !== 0 && !(answer.headers.get('server')?.[0] ?? '').includes('kns-dispatcher')
    const verstat = /verstat=([\w-]+)/.exec(answer.headers.get('p-asserted-identity')?.[0] ?? '')?.[1]
    if (answer.status === 0) request.failure = 'no final answer'
    else if (answer.status !== 302) request.failure = `SIP ${answer.status}`
    else if (verstat !== 'TN-Validation-Passed') request.failure = `verstat ${verstat}`
  }

  #identity(): string {
    const { caller } = this.#targets
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const input = `${b64({ alg: 'ES256', typ: 'passport', ppt: 'shaken', kid: caller.keyId })}.${b64({
      attest: 'A', dest: { tn: [caller.called.slice(1)] }, iat: Math.floor(Date.now() / 1000), orig: { tn: caller.number.slice(1) }, origid: randomUUID(),
    })}`
    const signature = sign('sha256', Buffer.from(input), { key: caller.privateKey, dsaEncoding: 'ieee-p1363' })
    return `${input}.${signature.toString('base64url')};alg=ES256;ppt=shaken`
  }

  /**
   * A new user: the number registered, then a phone login through the built-in client, as the
   * approval page does it: the authorization request, the interaction's details, a code sent
   * by SMS (only to a registered number; read at the gateway), the code entered, and the
   * redirects back to the page with an id_token. Stops at the first failure.
   */
  async #login(): Promise<void> {
    const phone = `+4420${String(randomInt(0, 100_000_000)).padStart(8, '0')}`
    const registered = await this.#http('registration', '/numsys/register-user-login', { body: { email: `mix-${randomBytes(4).toString('hex')}@example.com`, phoneNumber: phone } })
    if (registered?.status !== 200) return
    const { apiUrl } = this.#targets
    const cookies = new Map<string, string>()
    const browse = async (path: string, expected: number, body?: unknown) => {
      const headers: Record<string, string> = cookies.size === 0 ? {} : { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') }
      const answer = await this.#http('login', path, { headers, redirect: 'manual', judge: (s, b) => (s === expected ? undefined : String(b.code ?? s)), ...(body === undefined ? {} : { body }) })
      for (const line of answer?.headers.getSetCookie() ?? []) {
        const [pair] = line.split(';')
        const eq = pair!.indexOf('=')
        const value = pair!.slice(eq + 1).trim()
        if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) cookies.delete(pair!.slice(0, eq).trim())
        else cookies.set(pair!.slice(0, eq).trim(), value)
      }
      return answer?.status === expected ? answer : undefined
    }
    const auth = new URLSearchParams({ client_id: 'kns', redirect_uri: `${apiUrl}/approve`, response_type: 'id_token', scope: 'openid', nonce: randomUUID(), state: 's', prompt: 'login' })
    const started = await browse(`/oidc/auth?${auth}`, 303)
    const uid = /\/oidc\/interaction\/([^/?#]+)$/.exec(started?.headers.get('location') ?? '')?.[1]
    if (uid === undefined) return
    if ((await browse(`/oidc/interaction/${uid}/details`, 200)) === undefined) return
    const since = Date.now()
    const sent = await browse(`/oidc/interaction/${uid}/code`, 202, { phoneNumber: phone })
    if (sent === undefined) return
    const code = await this.#targets.sms.codeFor(phone, since, 10_000)
    if (code === undefined) {
      // The node said it sent the code (it texts after answering): the request did not do what it said.
      sent.request.failure = 'answered 202, no code came by SMS'
      return
    }
    const login = await browse(`/oidc/interaction/${uid}/login`, 200, { code })
    if (login === undefined) return
    let next = new URL(String(login.body.redirectTo), apiUrl)
    for (let hop = 0; hop < 4 && next.pathname !== '/approve'; hop++) {
      const answer = await browse(next.pathname + next.search, 303)
      if (answer === undefined) return
      next = new URL(answer.headers.get('location') ?? '', apiUrl)
    }
    if (!next.hash.includes('id_token=')) {
      this.records.requests.push({ id: `mix-end-${uid}`, kind: 'login', start: Date.now(), end: Date.now(), status: 0, failure: `login ended at ${next.pathname}`, byService: false })
    }
  }

  /** One HTTP request through HAProxy, recorded; the answer, or undefined when none came. */
  async #http(kind: RequestKind, path: string, options: {
    body?: unknown; headers?: Record<string, string>; timeoutMs?: number; redirect?: 'manual'
    judge?: (status: number, body: Record<string, unknown>) => string | undefined
  }): Promise<Answer | undefined> {
    const id = `mix-${(++this.#sequence).toString(36)}-${randomBytes(3).toString('hex')}`
    const request: MixRequest = { id, kind, start: Date.now(), status: 0, byService: false }
    this.records.requests.push(request)
    try {
      const res = await fetch(`${this.#targets.apiUrl}${path}`, {
        method: options.body === undefined ? 'GET' : 'POST',
        headers: { 'x-request-id': id, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        ...(options.redirect === undefined ? {} : { redirect: options.redirect }),
        signal: AbortSignal.timeout(options.timeoutMs ?? TIMEOUT_MS),
      })
      const text = await res.text()
      let body: Record<string, unknown> = {}
      try {
        body = JSON.parse(text) as Record<string, unknown>
      } catch { /* a page, or HAProxy's own answer */ }
      request.end = Date.now()
      request.status = res.status
      request.byService = res.headers.get('x-request-id') === id
      const retryAfter = res.headers.get('retry-after')
      if (retryAfter !== null) request.retryAfter = retryAfter
      const failure = (options.judge ?? ((s, b) => (s === 200 ? undefined : String(b.code ?? s))))(res.status, body)
      if (failure !== undefined) request.failure = failure
      return { status: res.status, body, headers: res.headers, request }
    } catch (err) {
      request.end = Date.now()
      request.failure = clientError(err)
      return undefined
    }
  }
}
