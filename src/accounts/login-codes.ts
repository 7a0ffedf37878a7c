import { createHmac, randomInt, randomUUID, timingSafeEqual } from 'node:crypto'
import type { Database } from '../db/engine.ts'
import { LoginCodeExpiredError, LoginCodeInvalidError } from '../errors.ts'
import { addressGroup } from '../lib/client-address.ts'
import { findUserIdByPhone } from './account-claims.ts'
import { LoginCodeCounts, type VerifyRefusal } from './login-code-counts.ts'
import { checkBudgets, lockBudgets, rememberRequester, SendRefusedError, sweepKnownRequesters, type LoginCodeLimits, type SendKey } from './send-budgets.ts'
import type { SmsSender } from './sms/sms-sender.ts'

/**
 * One-time login codes sent to the number: 6 digits from the CSPRNG, kept only as an HMAC,
 * valid CODE_TTL_MS, at most MAX_ATTEMPTS tries, bound to the login (the provider's
 * interaction, itself bound to the browser by its cookie). Sends are limited per number and
 * requester (with a cooldown between two), per number, per requester and per number prefix
 * (send-budgets.ts): SMS pumping (a form made to text premium ranges) is the first attack on
 * any such form, and a stranger must not be able to spend the owner's budget.
 *
 * A number without an account gets the same answers and the same work (a code is made and
 * stored) as one with an account; only the SMS is not sent, and it is sent after the answer
 * either way, so neither the answer nor its timing tells whether a number is registered.
 */
export const CODE_TTL_MS = 5 * 60_000
export const MAX_ATTEMPTS = 5
const HOUR_MS = 3600_000

export type { LoginCodeLimits } from './send-budgets.ts'

export interface LoginCodesDeps {
  db: Database
  secret: () => Buffer
  sms: SmsSender
  limits: LoginCodeLimits
  /** Where the code's text says it is from (the WebOTP line), e.g. `kns.example.com`. */
  host: string
  onDeliveryError(err: unknown): void
}

interface CodeRow { id: string; phone: string; code_mac: string; attempts: number; expires_at: number; used_at: number | null }

export class LoginCodes {
  /** What this process's codes and texts came to (/metrics). */
  readonly counts: LoginCodeCounts
  readonly #deps: LoginCodesDeps

  constructor(deps: LoginCodesDeps) {
    this.#deps = deps
    this.counts = new LoginCodeCounts(deps.sms.kind)
  }

  #mac(purpose: string, value: string): string {
    return createHmac('sha256', this.#deps.secret()).update(`kns/login-codes/v1\0${purpose}\0${value}`).digest('hex')
  }

  prefixOf(phone: string): string {
    return phone.replace(/^\+/, '').slice(0, this.#deps.limits.prefixDigits)
  }

  /** The requester a client address counts as: an HMAC of its address group (an IPv6 /64), never the address itself. */
  #requester(clientIp: string): string {
    return this.#mac('client', addressGroup(clientIp))
  }

  /**
   * Sends a new code for this login to `phone` (replacing an earlier one), within the limits.
   * The limits are checked and the send counted in one transaction holding the send's budgets
   * (send-budgets.ts), so simultaneous sends are counted one after the other.
   */
  async send(input: { interactionUid: string; phone: string; clientIp: string; now?: number }): Promise<{ expiresInS: number; resendAfterS: number }> {
    const { db, limits } = this.#deps
    const now = input.now ?? Date.now()
    const key: SendKey = { phone: input.phone, prefix: this.prefixOf(input.phone), requester: this.#requester(input.clientIp) }
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0')
    const id = randomUUID()
    const hasAccount = await db.transaction(async (tx) => {
      await lockBudgets(tx, key)
      const texted = (await findUserIdByPhone(tx, input.phone)) !== null
      try {
        await checkBudgets(tx, limits, key, now)
      } catch (err) {
        if (err instanceof SendRefusedError) this.counts.refusedAt('send', err.budget)
        throw err
      }
      // A resend replaces the code: only the newest one of a login counts.
      await tx.run('UPDATE login_codes SET used_at = $2 WHERE interaction_uid = $1 AND used_at IS NULL', [input.interactionUid, now])
      await tx.run(`INSERT INTO login_codes (id, interaction_uid, phone, prefix, client_hash, code_mac, attempts, created_at, expires_at, used_at, texted)
        VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, NULL, $9)`,
      [id, input.interactionUid, input.phone, key.prefix, key.requester, this.#mac('code', `${id}\0${code}`), now, now + CODE_TTL_MS, texted ? 1 : 0])
      return texted
    })
    this.counts.sent.add({})
    // After the answer, whichever way: delivery time is not the caller's to measure.
    setImmediate(() => {
      if (!hasAccount) return
      this.#deps.sms.send({ to: input.phone, text: this.#text(code) }).then(() => this.counts.smsOutcome(), (err: unknown) => {
        this.counts.smsOutcome(err)
        this.#deps.onDeliveryError(err)
      })
    })
    return { expiresInS: CODE_TTL_MS / 1000, resendAfterS: limits.cooldownS }
  }

  #text(code: string): string {
    // The last line is the WebOTP format, so a phone's browser can offer to fill the code in.
    return `${code} is your KNS login code. It expires in ${CODE_TTL_MS / 60_000} minutes. Never share it.\n\n@${this.#deps.host} #${code}`
  }

  /**
   * Checks `code` against this login's newest code: one try used, compared in constant time.
   * Right: the code is used up and the account's user ID returned.
   */
  async verify(input: { interactionUid: string; code: string; clientIp?: string; now?: number }): Promise<{ userId: string; phone: string }> {
    const { db } = this.#deps
    const now = input.now ?? Date.now()
    const row = await db.get<CodeRow>(`SELECT id, phone, code_mac, attempts, expires_at, used_at FROM login_codes
      WHERE interaction_uid = $1 ORDER BY created_at DESC LIMIT 1`, [input.interactionUid])
    const refused = <E extends Error>(reason: VerifyRefusal, err: E): E => {
      this.counts.refusedAt('verify', reason)
      return err
    }
    const expired = (reason: VerifyRefusal) => refused(reason, new LoginCodeExpiredError('this code has expired or was used up: ask for a new one', { field: 'code' }))
    if (row === undefined) throw refused('no_code', new LoginCodeExpiredError('no code was sent for this login: ask for one first', { field: 'code' }))
    if (row.used_at !== null) throw expired('used')
    if (Number(row.expires_at) <= now) throw expired('expired')
    if (Number(row.attempts) >= MAX_ATTEMPTS) throw expired('no_tries_left')
    // Count the try first (atomically): parallel guesses cannot get past the limit.
    const counted = await db.run('UPDATE login_codes SET attempts = attempts + 1 WHERE id = $1 AND used_at IS NULL AND attempts < $2', [row.id, MAX_ATTEMPTS])
    if (counted === 0) throw expired('no_tries_left')
    const attemptsLeft = MAX_ATTEMPTS - (Number(row.attempts) + 1)
    const given = Buffer.from(this.#mac('code', `${row.id}\0${/^\d{6}$/.test(input.code) ? input.code : ''}`), 'hex')
    const stored = Buffer.from(row.code_mac, 'hex')
    const wrong = () => refused('wrong_code', new LoginCodeInvalidError(`wrong code; ${attemptsLeft} ${attemptsLeft === 1 ? 'try' : 'tries'} left`, attemptsLeft))
    if (given.length !== stored.length || !timingSafeEqual(given, stored)) throw attemptsLeft > 0 ? wrong() : expired('no_tries_left')
    const used = await db.run('UPDATE login_codes SET used_at = $2 WHERE id = $1 AND used_at IS NULL', [row.id, now])
    if (used === 0) throw expired('used')
    const userId = await findUserIdByPhone(db, row.phone)
    // No account: no code was ever sent, so only a guess gets here; it is answered as one.
    if (userId === null) throw wrong()
    // This requester holds the number: strangers' sends to it no longer keep it from a code.
    if (input.clientIp !== undefined) await rememberRequester(db, row.phone, this.#requester(input.clientIp), now)
    this.counts.verified.add({})
    return { userId, phone: row.phone }
  }

  /** Codes past any limit window, and requesters not seen logging in for KNOWN_REQUESTER_MS, are of no further use. */
  async sweep(now = Date.now()): Promise<number> {
    const known = await sweepKnownRequesters(this.#deps.db, now)
    return known + await this.#deps.db.run('DELETE FROM login_codes WHERE created_at < $1', [now - 2 * HOUR_MS])
  }
}
