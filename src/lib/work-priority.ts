import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * How urgent the work running now is: the priority admission gave the request it belongs to
 * (src/http/admission.ts), carried through its asynchronous continuations, so that a queue
 * further down (the PostgreSQL pool's wait for a connection) can serve the same order.
 * Work outside any request (the ledger watcher, a CLI command) is `normal`.
 */
export type WorkPriority = 'ops' | 'critical' | 'normal' | 'low'

/** Highest first: a lower index is served first. */
export const WORK_PRIORITIES: readonly WorkPriority[] = ['ops', 'critical', 'normal', 'low']

const current = new AsyncLocalStorage<WorkPriority>()

/** Runs `fn` (and everything it starts) as work of `priority`. */
export function runWithPriority<T>(priority: WorkPriority, fn: () => T): T {
  return current.run(priority, fn)
}

export function currentPriority(): WorkPriority {
  return current.getStore() ?? 'normal'
}
