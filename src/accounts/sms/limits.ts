import { SmsDeliveryError } from './sms-sender.ts'

/** A timeout failure: the message may still have gone out, so a retry may send it twice. */
export function timeoutFailure(what: string, ms: number): SmsDeliveryError {
  return new SmsDeliveryError(`${what} within ${ms} ms`, { retryable: true, reason: 'timeout' })
}

/**
 * `promise`, or a rejection with `onTimeout()` once `deadline` (epoch ms) has passed. The
 * promise itself is not cancelled (a bind another send waits for goes on).
 */
export function withDeadline<T>(promise: Promise<T>, deadline: number, onTimeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), Math.max(0, deadline - Date.now()))
    promise.then(
      (value) => { clearTimeout(timer); resolve(value) },
      (error: unknown) => { clearTimeout(timer); reject(error) },
    )
  })
}

interface Waiter {
  grant: () => void
  fail: (error: Error) => void
}

/**
 * At most `max` operations at once (SMPP: submits awaiting their submit_sm_resp, the
 * session's window); the others wait in order, each until its own deadline.
 */
export class InFlightLimit {
  readonly #max: number
  #active = 0
  readonly #waiters: Waiter[] = []

  constructor(max: number) {
    this.#max = max
  }

  get active(): number {
    return this.#active
  }

  /** Resolves with the release function of a slot (call it exactly once). */
  acquire(deadline: number, onTimeout: () => Error): Promise<() => void> {
    if (this.#active < this.#max) {
      this.#active++
      return Promise.resolve(this.#releaser())
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => { clearTimeout(timer); resolve(this.#releaser()) },
        fail: (error) => { clearTimeout(timer); reject(error) },
      }
      const timer = setTimeout(() => {
        const at = this.#waiters.indexOf(waiter)
        if (at >= 0) this.#waiters.splice(at, 1)
        reject(onTimeout())
      }, Math.max(0, deadline - Date.now()))
      this.#waiters.push(waiter)
    })
  }

  /** Every waiter rejects with `error` (the sender is closing). */
  failWaiters(error: Error): void {
    for (const waiter of this.#waiters.splice(0)) waiter.fail(error)
  }

  #releaser(): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      // The slot passes straight to the next waiter, so a newcomer cannot overtake it.
      const next = this.#waiters.shift()
      if (next !== undefined) next.grant()
      else this.#active--
    }
  }
}
