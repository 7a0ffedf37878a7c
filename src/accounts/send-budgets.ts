import type { Executor } from '../db/engine.ts'
import { RateLimitedError } from '../errors.ts'

/**
 * The send budgets of login codes (docs/accounts.md, "Send limits"), checked in the transaction
 * that records the send, after locking every budget the send counts toward: two simultaneous
 * sends cannot both see the last unit of a budget (issue 31: 40 parallel sends for one number
 * gave 40 texts on PostgreSQL).
 *
 * Two kinds of budget, so that no third party can spend the owner's and a number without an
 * account is answered exactly as one with:
 * - **per number and requester** (the requester: the client's address group, see
 *   src/lib/client-address.ts): the cooldown and LOGIN_SENDS_PER_NUMBER. A stranger spends only
 *   his own. Every send counts alike, texted or not.
 * - **per number, across requesters** (LOGIN_SENDS_PER_NUMBER_TOTAL): bounds how often one
 *   number can be texted from many addresses. Every send counts alike (a cap on texts only
 *   would tell which numbers have an account); a requester that has logged in to the number
 *   before (`login_known_requesters`) is not held by it.
 * - **pumping** (SMS sent at our cost): per requester (LOGIN_SENDS_PER_IP) and per number prefix
 *   (LOGIN_SENDS_PER_PREFIX). Only sends that texted count, so a flood of sends to numbers
 *   without an account costs nothing and locks nobody out; once spent, every send of that
 *   requester or prefix is refused, whether its number has an account or not. The prefix budget
 *   does not hold a requester known to the number either.
 */
export interface LoginCodeLimits {
  /** Sends per hour per (number, requester). */
  perNumber: number
  /** Sends per hour per number from all requesters (a requester known to the number excepted). */
  perNumberTotal: number
  /** Texts per hour per requester. */
  perIp: number
  /** Texts per hour per number prefix. */
  perPrefix: number
  prefixDigits: number
  cooldownS: number
}

/** What a send counts toward: the number, its prefix, the requester (an HMAC of its address group). */
export interface SendKey {
  phone: string
  prefix: string
  requester: string
}

const HOUR_MS = 3600_000
/** A login from a requester keeps it known to the number this long (owners log in rarely: to approve). */
export const KNOWN_REQUESTER_MS = 90 * 24 * HOUR_MS

/**
 * Holds the send's budgets until the transaction ends. PostgreSQL: a transaction advisory lock
 * per budget key, in the two-key form with one class per kind of key (so a number's key never
 * collides with a prefix's), taken in the same order (number, prefix, requester) by every send,
 * so two sends never wait on each other in a cycle; the schema is in the key (each test file,
 * or tenant, has its own). SQLite: nothing to do, a transaction holds the database's write lock
 * from its start (BEGIN IMMEDIATE), so sends are one at a time across processes.
 */
export async function lockBudgets(tx: Executor, key: SendKey): Promise<void> {
  if (tx.engine !== 'postgres') return
  // The target list is evaluated left to right: the order above.
  await tx.get(`SELECT
    pg_advisory_xact_lock(31001, hashtext(current_schema() || ':' || $1::text)) AS number,
    pg_advisory_xact_lock(31002, hashtext(current_schema() || ':' || $2::text)) AS prefix,
    pg_advisory_xact_lock(31003, hashtext(current_schema() || ':' || $3::text)) AS requester`, [key.phone, key.prefix, key.requester])
}

interface Counted { last: number | null; pair: number; total: number; requester: number; prefix: number; known: number }

/**
 * Every budget of a send counted in one statement ($1 phone, $2 prefix, $3 requester, $4 an hour
 * ago, $5 KNOWN_REQUESTER_MS ago). The pumping counts read only texted rows through partial
 * indexes (migration 19): sends that text nothing are not bounded per prefix or requester, and a
 * count that visited them would cost a flood's size under the send's locks.
 */
export const COUNT_BUDGETS = `SELECT
    (SELECT MAX(created_at) FROM login_codes WHERE phone = $1 AND client_hash = $3) AS last,
    (SELECT COUNT(*) FROM login_codes WHERE phone = $1 AND client_hash = $3 AND created_at > $4) AS pair,
    (SELECT COUNT(*) FROM login_codes WHERE phone = $1 AND created_at > $4) AS total,
    (SELECT COUNT(*) FROM login_codes WHERE client_hash = $3 AND texted = 1 AND created_at > $4) AS requester,
    (SELECT COUNT(*) FROM login_codes WHERE prefix = $2 AND texted = 1 AND created_at > $4) AS prefix,
    (SELECT COUNT(*) FROM login_known_requesters WHERE phone = $1 AND client_hash = $3 AND logged_in_at > $5) AS known`

/** The budget a refused send was over (a metric's label: kns_login_codes_refused_total). */
export type SendBudget = 'cooldown' | 'number_and_requester' | 'number' | 'requester' | 'prefix'
export const SEND_BUDGETS: readonly SendBudget[] = ['cooldown', 'number_and_requester', 'number', 'requester', 'prefix']

/** A send over a budget: 429 with Retry-After, naming the budget for the metrics. */
export class SendRefusedError extends RateLimitedError {
  readonly budget: SendBudget
  constructor(budget: SendBudget, message: string, retryAfterS: number) {
    super(message, retryAfterS)
    this.budget = budget
  }
}

/** Throws SendRefusedError (429 with Retry-After) when this send is over a budget; call with the budgets locked. */
export async function checkBudgets(tx: Executor, limits: LoginCodeLimits, key: SendKey, now: number): Promise<void> {
  const since = now - HOUR_MS
  // The same statement whatever the number: the work does not tell whether it has an account.
  const counted = await tx.get<Counted>(COUNT_BUDGETS, [key.phone, key.prefix, key.requester, since, now - KNOWN_REQUESTER_MS])
  const last = counted?.last == null ? null : Number(counted.last)
  if (last !== null && now - last < limits.cooldownS * 1000) {
    const wait = Math.ceil((last + limits.cooldownS * 1000 - now) / 1000)
    throw new SendRefusedError('cooldown', `a code was sent to this number a moment ago; ask again in ${wait} s`, wait)
  }
  const over = (count: unknown, max: number) => Number(count) >= max
  const known = Number(counted?.known) > 0
  if (over(counted?.pair, limits.perNumber)) {
    throw await hourly(tx, 'number_and_requester', 'this number from this network address', 'phone = $2 AND client_hash = $3', [key.phone, key.requester], now)
  }
  if (!known && over(counted?.total, limits.perNumberTotal)) throw await hourly(tx, 'number', 'this number', 'phone = $2', [key.phone], now)
  if (over(counted?.requester, limits.perIp)) throw await hourly(tx, 'requester', 'this network address', 'client_hash = $2 AND texted = 1', [key.requester], now)
  if (!known && over(counted?.prefix, limits.perPrefix)) throw await hourly(tx, 'prefix', 'numbers of this range', 'prefix = $2 AND texted = 1', [key.prefix], now)
}

/** The limit error, with the wait until the oldest send the budget counted falls out of the hour. */
async function hourly(tx: Executor, budget: SendBudget, what: string, where: string, values: string[], now: number): Promise<SendRefusedError> {
  const oldest = await tx.get<{ t: number }>(`SELECT MIN(created_at) AS t FROM login_codes WHERE created_at > $1 AND ${where}`, [now - HOUR_MS, ...values])
  const wait = Math.max(1, Math.ceil((Number(oldest?.t ?? now) + HOUR_MS - now) / 1000))
  return new SendRefusedError(budget, `too many login codes sent to ${what} this hour; try again in ${Math.ceil(wait / 60)} min`, wait)
}

/** Records that `requester` logged in to `phone`: the cross-requester budgets no longer hold it for that number. */
export async function rememberRequester(db: Executor, phone: string, requester: string, now: number): Promise<void> {
  await db.run(`INSERT INTO login_known_requesters (phone, client_hash, logged_in_at) VALUES ($1, $2, $3)
    ON CONFLICT (phone, client_hash) DO UPDATE SET logged_in_at = excluded.logged_in_at`, [phone, requester, now])
}

/** Known requesters past KNOWN_REQUESTER_MS are of no further use. */
export async function sweepKnownRequesters(db: Executor, now: number): Promise<number> {
  return db.run('DELETE FROM login_known_requesters WHERE logged_in_at < $1', [now - KNOWN_REQUESTER_MS])
}
