import type { Database } from '../../db/engine.ts'
import type { OutboundOptions } from '../../lib/outbound-http.ts'
import type { SealedBox } from '../../lib/sealed-box.ts'
import { Tally } from '../../lib/tally.ts'
import { ATTEMPT_FAILURES, attemptDelivery, nextAttemptAt, type AttemptFailure, type AttemptOutcome } from './attempt.ts'
import { claimDue, DEFAULT_FAIRNESS, endpointAnswered, endpointFailed, markAttemptFailed, markDelivered, type ClaimedDelivery, type Fairness } from './deliveries.ts'

/** Within the server's shutdown grace (10 s), with room for the rest of the shutdown. */
const STOP_GRACE_MS = 5000

export interface DeliveryWorkerOptions {
  outbound: OutboundOptions
  retry: { baseMs: number; giveUpAfterMs: number }
  /** Deliveries in flight at once, per process. */
  concurrency?: number
  /** How often due retries are looked for when nothing wakes the worker. */
  pollMs?: number
  /** Per-endpoint concurrency and the circuit breaker (WEBHOOK_ENDPOINT_CONCURRENCY, WEBHOOK_BREAKER_FAILURES). */
  fairness?: Fairness
  /** Each failed attempt, once recorded (the server logs it). */
  onFailedAttempt?: (failed: FailedAttempt) => void
}

/** A failed attempt as the server logs it: never the URL, the secret or what the endpoint answered. */
export interface FailedAttempt {
  subscriptionId: string; eventId: string; attempt: number; status: number | null; reason: AttemptFailure
  /** When it is tried again; null: given up. */
  nextAttemptAt: number | null
}

/** What this process did, for /metrics. */
export interface DeliveryCounts { delivered: number; retried: number; failed: number }

/**
 * Sends what the outbox queued. Every server process runs one: each delivery is claimed by
 * one of them (see claimDue), so they share the work and a process that dies leaves its
 * claims to expire and be taken again. Woken at once by a decision (the change signal, from
 * any process) and otherwise every `pollMs` for due retries.
 */
export class DeliveryWorker {
  readonly counts: DeliveryCounts = { delivered: 0, retried: 0, failed: 0 }
  /** Failed attempts (retried or given up) by reason, for /metrics. */
  readonly failures = new Tally<'reason'>(['reason'], ATTEMPT_FAILURES.map((reason) => ({ reason })))
  readonly #db: Database
  readonly #box: SealedBox
  readonly #options: Required<DeliveryWorkerOptions>
  readonly #leaseMs: number
  #inFlight = 0
  #pumping = false
  #again = false
  #timer: NodeJS.Timeout | undefined
  #stopped = true
  readonly #running = new Set<Promise<void>>()

  constructor(db: Database, box: SealedBox, options: DeliveryWorkerOptions) {
    this.#db = db
    this.#box = box
    this.#options = { concurrency: 32, pollMs: 1000, fairness: DEFAULT_FAIRNESS, onFailedAttempt: () => {}, ...options }
    // Past the attempt's deadline with room to record its outcome, so a live attempt keeps its
    // claim; short enough that a killed process's claims are taken again within seconds.
    this.#leaseMs = options.outbound.timeoutMs * 2 + 5000
  }

  start(): void {
    if (!this.#stopped) return
    this.#stopped = false
    this.#timer = setInterval(() => this.wake(), this.#options.pollMs)
    this.#timer.unref()
    this.wake()
  }

  /** Something may be due: look now (coalesced while a look is running). */
  wake(): void {
    if (this.#stopped) return
    if (this.#pumping) {
      this.#again = true
      return
    }
    this.#pumping = true
    void this.#pump().finally(() => { this.#pumping = false })
  }

  async #pump(): Promise<void> {
    do {
      this.#again = false
      while (!this.#stopped && this.#inFlight < this.#options.concurrency) {
        const room = this.#options.concurrency - this.#inFlight
        let batch: ClaimedDelivery[]
        try {
          batch = await claimDue(this.#db, Date.now(), room, this.#leaseMs, undefined, this.#options.fairness)
        } catch {
          return // the database is down: the next poll tries again
        }
        for (const delivery of batch) this.#track(delivery)
        if (batch.length < room) break
      }
    } while (this.#again && !this.#stopped)
  }

  #track(delivery: ClaimedDelivery): void {
    this.#inFlight++
    const running = this.#attempt(delivery).finally(() => {
      this.#inFlight--
      this.#running.delete(running)
      // A slot is free: there may be more waiting than the last claim could take.
      this.wake()
    })
    this.#running.add(running)
  }

  async #attempt(delivery: ClaimedDelivery): Promise<void> {
    const outcome = await attemptDelivery(delivery, this.#box, this.#options.outbound, Date.now)
    await this.#record(delivery, outcome).catch(() => {
      // Not recorded (database down): the claim's lease ends and it is attempted again,
      // with the same webhook-id, as at-least-once allows.
    })
  }

  async #record(delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<AttemptOutcome> {
    const now = Date.now()
    if (outcome.delivered) {
      await markDelivered(this.#db, delivery.id, outcome.status, now)
      await endpointAnswered(this.#db, delivery.subscriptionId)
      this.counts.delivered++
      return outcome
    }
    let retryAt = outcome.retry ? nextAttemptAt(delivery.attempts, delivery.createdAt, now, this.#options.retry) : null
    if (outcome.retry) {
      // The endpoint failed: its breaker counts it. While it is paused nothing of it is given
      // up: its deliveries wait for it to answer again (the first one tries it then).
      const pausedUntil = await endpointFailed(this.#db, delivery.subscriptionId, now, this.#options.fairness.breakerFailures)
      if (pausedUntil !== null) retryAt = Math.max(retryAt ?? 0, pausedUntil)
    }
    await markAttemptFailed(this.#db, delivery, { status: outcome.status, error: outcome.error }, now, retryAt)
    if (retryAt === null) this.counts.failed++
    else this.counts.retried++
    this.failures.add({ reason: outcome.reason })
    const { subscriptionId, eventId, attempts: attempt } = delivery
    this.#options.onFailedAttempt({ subscriptionId, eventId, attempt, status: outcome.status, reason: outcome.reason, nextAttemptAt: retryAt })
    return outcome
  }

  /**
   * One attempt of that delivery now, whoever's worker would have taken it (`kns webhook
   * test`): its outcome, or null when it is not due or another process holds it.
   */
  async deliverNow(id: number): Promise<AttemptOutcome | null> {
    const [delivery] = await claimDue(this.#db, Date.now(), 1, this.#leaseMs, id)
    if (delivery === undefined) return null
    return this.#record(delivery, await attemptDelivery(delivery, this.#box, this.#options.outbound, Date.now))
  }

  /**
   * Stops claiming and gives the attempts in flight a few seconds to finish and be recorded;
   * one still running after that is left to its lease (attempted again later, same webhook-id).
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.#stopped = true
    clearInterval(this.#timer)
    let timer: NodeJS.Timeout | undefined
    const grace = new Promise<void>((resolve) => { timer = setTimeout(resolve, graceMs) })
    await Promise.race([Promise.allSettled([...this.#running]), grace])
    clearTimeout(timer)
  }
}
