/**
 * Concurrent approval creations against a running server, every attempt recorded (when, how
 * long, what status and error code), and every approval answered 200 kept: the
 * acknowledged approvals a fault must not lose.
 */
import { randomBytes } from 'node:crypto'
import { approvalPhoneBody, sleep } from '../support/process.ts'

export interface Attempt {
  kind: 'approval' | 'registration'
  /** performance.now() when the request was sent, and its duration. */
  at: number
  ms: number
  /** HTTP status; 0 when no response came (connection refused or reset, timeout). */
  status: number
  /** The error body's `code`, or the client error's message when there was no response. */
  code?: string
  /** The error body's shape, checked by the tests: `success`, `error`, `message`, `requestId`. */
  body?: Record<string, unknown>
  /** The error answer's Retry-After header, if any. */
  retryAfter?: string | null
}

export interface Acknowledged {
  approvalNumber: string
  referenceNumber: string
  /** performance.now() when its request was sent. */
  at: number
}

/**
 * Settings for a server under ApprovalLoad: its workers are one address standing in for many
 * clients (as the benchmarks' load is), so the per-client in-flight cap and the bound on
 * registrations in progress are lifted; what the fault tests judge is the database's
 * failures (503 DATABASE_UNAVAILABLE), not a client's share.
 */
export const LOAD_SERVER_ENV = { MAX_IN_FLIGHT_PER_CLIENT: '100000', MAX_REGISTRATIONS_IN_PROGRESS: '100000' } as const

export interface LoadOptions {
  url: string
  key: string
  /** A registered number (it has a token), for approval-phone. */
  phoneNumber: string
  workers: number
  /** Every n-th request of a worker is a registration (a database transaction) instead; 0 = none. */
  registrationEvery?: number
  /** Client timeout of one request: a server that hangs shows up as status 0 "timeout". */
  timeoutMs?: number
}

export class ApprovalLoad {
  readonly attempts: Attempt[] = []
  readonly acknowledged: Acknowledged[] = []
  /** Approval requests that got no 200: retried with the same referenceNumber after the fault. */
  readonly unacknowledged: ReturnType<typeof approvalPhoneBody>[] = []
  readonly #options: Required<LoadOptions>
  #running = false
  #workers: Promise<void>[] = []

  constructor(options: LoadOptions) {
    this.#options = { registrationEvery: 0, timeoutMs: 15_000, ...options }
  }

  start(): void {
    this.#running = true
    this.#workers = Array.from({ length: this.#options.workers }, (_, i) => this.#work(i))
  }

  async stop(): Promise<void> {
    this.#running = false
    await Promise.all(this.#workers)
  }

  /** Resolves once `n` approvals have been acknowledged (or rejects after `timeoutMs`). */
  async untilAcknowledged(n: number, timeoutMs = 10_000): Promise<void> {
    const deadline = performance.now() + timeoutMs
    while (this.acknowledged.length < n) {
      if (performance.now() > deadline) throw new Error(`only ${this.acknowledged.length} of ${n} approvals acknowledged in ${timeoutMs} ms: ${summarize(this.attempts)}`)
      await sleep(20)
    }
  }

  async #work(worker: number): Promise<void> {
    const { registrationEvery } = this.#options
    for (let i = 0; this.#running; i++) {
      if (registrationEvery > 0 && i % registrationEvery === registrationEvery - 1) await this.#register()
      else await this.#approve(worker, i)
      // A refused connection or a 503 answers in a millisecond: without a pause the workers
      // would spin and starve the machine the server runs on.
      const { status } = this.attempts.at(-1)!
      if (status === 0) await sleep(20)
      else if (status >= 500) await sleep(5)
    }
  }

  async #approve(worker: number, i: number): Promise<void> {
    const body = approvalPhoneBody(this.#options.phoneNumber, `fault-${worker}-${i}-${randomBytes(4).toString('hex')}`)
    const at = performance.now()
    const answer = await this.#post('approval', '/numsys/approval-phone', body, { 'x-api-key': this.#options.key })
    if (answer?.status === 200) this.acknowledged.push({ approvalNumber: String(answer.body.approvalNumber), referenceNumber: body.referenceNumber, at })
    else this.unacknowledged.push(body)
  }

  async #register(): Promise<void> {
    const phoneNumber = `+4420${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`
    await this.#post('registration', '/numsys/register-user-login', { email: 'load@example.com', phoneNumber }, {})
  }

  async #post(kind: Attempt['kind'], path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> } | undefined> {
    const at = performance.now()
    try {
      const res = await fetch(`${this.#options.url}${path}`, {
        method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.#options.timeoutMs),
      })
      const parsed = (await res.json()) as Record<string, unknown>
      const attempt: Attempt = { kind, at, ms: performance.now() - at, status: res.status }
      if (res.status !== 200) Object.assign(attempt, { code: String(parsed.code), body: parsed, retryAfter: res.headers.get('retry-after') })
      this.attempts.push(attempt)
      return { status: res.status, body: parsed }
    } catch (err) {
      const name = (err as Error).name === 'TimeoutError' ? 'timeout' : String((err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message)
      this.attempts.push({ kind, at, ms: performance.now() - at, status: 0, code: name })
      return undefined
    }
  }
}

/** "200: 812, 503 DATABASE_UNAVAILABLE: 37, 0 ECONNREFUSED: 3": for diagnostics and messages. */
export function summarize(attempts: readonly Attempt[]): string {
  const counts = new Map<string, number>()
  for (const a of attempts) {
    const label = a.status === 200 ? '200' : `${a.status} ${a.code ?? ''}`.trim()
    counts.set(label, (counts.get(label) ?? 0) + 1)
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([label, n]) => `${label}: ${n}`).join(', ') || 'none'
}

/** Looks up every acknowledged approval; returns those not found (with what was answered). */
export async function missingApprovals(url: string, acknowledged: readonly Acknowledged[]): Promise<string[]> {
  const missing: string[] = []
  // A few at a time: enough to be quick, few enough not to look like a load test of its own.
  for (let i = 0; i < acknowledged.length; i += 32) {
    await Promise.all(acknowledged.slice(i, i + 32).map(async ({ approvalNumber }) => {
      const res = await fetch(`${url}/numsys/transaction_details?ref=${approvalNumber}`, { signal: AbortSignal.timeout(10_000) })
      const details = (await res.json()) as Record<string, unknown>
      if (res.status !== 200 || details.approvalNumber !== approvalNumber || details.status !== 'pending') {
        missing.push(`${approvalNumber}: ${res.status} ${JSON.stringify(details)}`)
      }
    }))
  }
  return missing
}
