/**
 * Which SQL statements a piece of work sends to the database: for tests that a path issues the
 * statements it should (and no more), instead of timing it. Only the work started inside
 * `recordStatements` is recorded (an AsyncLocalStorage context), so the service's background
 * work (the change watcher's polls, the sweepers) does not count; a coalesced batch counts
 * once, in the context of the request that started it. Statements of a transaction are
 * recorded as sent through its executor, between `BEGIN` and `COMMIT` (or `ROLLBACK`).
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import type { Database, Executor } from '../../src/db/engine.ts'

const recording = new AsyncLocalStorage<string[]>()

type Method = 'get' | 'all' | 'run'
const METHODS: Method[] = ['get', 'all', 'run']

/** `ex` with its statements recorded in the current recording's log (if any). */
function recorded<E extends Executor>(ex: E): E {
  const proxy = Object.create(ex) as E
  for (const method of METHODS) {
    const original = ex[method].bind(ex) as (sql: string, params?: readonly unknown[]) => Promise<unknown>
    Object.defineProperty(proxy, method, {
      value: (sql: string, params?: readonly unknown[]) => {
        recording.getStore()?.push(sql.replace(/\s+/g, ' ').trim())
        return original(sql, params)
      },
    })
  }
  return proxy
}

/**
 * Runs `fn` with `db`'s statements recorded. `db` is patched in place (the service holds it)
 * and restored after; its transactions hand `fn`'s work a recorded executor.
 */
export async function recordStatements<T>(db: Database, fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const log: string[] = []
  const own = db as unknown as Record<string, unknown>
  const patched: (Method | 'transaction')[] = [...METHODS, 'transaction']
  const view = recorded(db)
  for (const method of METHODS) own[method] = view[method]
  const transaction = db.transaction.bind(db)
  own.transaction = <R>(work: (tx: Executor) => Promise<R>) => {
    const log = recording.getStore()
    log?.push('BEGIN')
    return transaction((tx) => work(recorded(tx))).then(
      (value) => { log?.push('COMMIT'); return value },
      (err: unknown) => { log?.push('ROLLBACK'); throw err },
    )
  }
  try {
    const result = await recording.run(log, fn)
    return { result, statements: log }
  } finally {
    for (const method of patched) delete own[method]
  }
}
