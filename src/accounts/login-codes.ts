import { createHmac, randomInt, randomUUID, timingSafeEqual } from 'node:crypto'
import type { Database } from '../db/engine.ts'
import { LoginCodeExpiredError, LoginCodeInvalidError, RateLimitedError } from '../errors.ts'
import { findUserIdByPhone } from './account-claims.ts'
import type { SmsSender } from './sms/sms-sender.ts'

/**
 * One-time login codes sent to the number: 6 digits from the CSPRNG, kept only as an HMAC,
 * valid CODE_TTL_MS, at most MAX_ATTEMPTS tries, bound to the login (the provider's
 * interaction, itself bound to the browser by its cookie). Sends are limited per number (with
 * a cooldown between two), per client address and per number prefix: SMS pumping (a form made
 * to text premium ranges) is the first attack on any such form.
 *
 * A number without an account gets the same answers and the same work (a code is made and
 * stored) as one with an account; only the SMS is not sent, and it is sent after the answer
 * either way, so neither the answer nor its timing tells whether a number is registered.
 */
export const CODE_TTL_MS = 5 * 60_000
export const MAX_ATTEMPTS = 5
const HOUR_MS = 3600_000

export interface LoginCodeLimits {
  perNumber: number
  perIp: number
  perPrefix: number
  prefixDigits: number
  cooldownS: number
}

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
  readonly #deps: LoginCodesDeps

  constructor(deps: LoginCodesDeps) {
    this.#deps = deps
  }

  #mac(purpose: string, value: string): string {
    return createHmac('sha256', this.#deps.secret()).update(`kns/login-codes/v1\0${purpose}\0${value}`).digest('hex')
  }

  prefixOf(phone: string): string {
    return phone.replace(/^\+/, '').slice(0, this.#deps.limits.prefixDigits)
  }

  /** Sends a new code for this login to `phone` (replacing an earlier one), within the limits. */
  async send(input: { interactionUid: string; phone: string; clientIp: string; now?: number }): Promise<{ expiresInS: number; resendAfterS: number }> {
    const { db, limits } = this.#deps
    const now = input.now ?? Date.now()
    const prefix = this.prefixOf(input.phone)
    const clientHash = this.#mac('client', input.clientIp)
    await this.#checkLimits(input.phone, prefix, clientHash, now)
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0')
    const id = randomUUID()
    await db.transaction(async (tx) => {
      // A resend replaces the code: only the newest one of a login counts.
      await tx.run('UPDATE login_codes SET used_at = $2 WHERE interaction_uid = $1 AND used_at IS NULL', [input.interactionUid, now])
      await tx.run(`INSERT INTO login_codes (id, interaction_uid, phone, prefix, client_hash, code_mac, attempts, created_at, expires_at, used_at)
        VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, NULL)`,
      [id, input.interactionUid, input.phone, prefix, clientHash, this.#mac('code', `${id}\0${code}`), now, now + CODE_TTL_MS])
    })
    const hasAccount = (await findUserIdByPhone(db, input.phone)) !== null
    // After the answer, whichever way: delivery time is not the caller's to measure.
    setImmediate(() => {
      if (!hasAccount) return
      this.#deps.sms.send({ to: input.phone, text: this.#text(code) }).catch((err: unknown) => this.#deps.onDeliveryError(err))
    })
    return { expiresInS: CODE_TTL_MS / 1000, resendAfterS: limits.cooldownS }
  }

  #text(code: string): string {
    // The last line is the WebOTP format, so a phone's browser can offer to fill the code in.
    return `${code} is your KNS login code. It expires in ${CODE_TTL_MS / 60_000} minutes. Never share it.\n\n@${this.#deps.host} #${code}`
  }

  async #checkLimits(phone: string, prefix: string, clientHash: string, now: number): Promise<void> {
    const { db, limits } = this.#deps
    const since = now - HOUR_MS
    const counted = await db.get<{ last: number | null; number: number; client: number; prefix: number }>(`SELECT
      (SELECT MAX(created_at) FROM login_codes WHERE phone = $1) AS last,
      (SELECT COUNT(*) FROM login_codes WHERE phone = $1 AND created_at > $4) AS number,
      (SELECT COUNT(*) FROM login_codes WHERE client_hash = $2 AND created_at > $4) AS client,
      (SELECT COUNT(*) FROM login_codes WHERE prefix = $3 AND created_at > $4) AS prefix`, [phone, clientHash, prefix, since])
    const last = counted?.last == null ? null : Number(counted.last)
    if (last !== null && now - last < limits.cooldownS * 1000) {
      const wait = Math.ceil((last + limits.cooldownS * 1000 - now) / 1000)
      throw new RateLimitedError(`a code was sent to this number a moment ago; ask again in ${wait} s`, wait)
    }
    const over = (count: unknown, max: number) => Number(count) >= max
    if (over(counted?.number, limits.perNumber)) throw await this.#hourly('this number', 'phone = $1', phone, now)
    if (over(counted?.client, limits.perIp)) throw await this.#hourly('this network address', 'client_hash = $1', clientHash, now)
    if (over(counted?.prefix, limits.perPrefix)) throw await this.#hourly('numbers of this range', 'prefix = $1', prefix, now)
  }

  /** The limit error, with the wait until the oldest send of the hour falls out of it. */
  async #hourly(what: string, where: string, value: string, now: number): Promise<RateLimitedError> {
    const oldest = await this.#deps.db.get<{ t: number }>(`SELECT MIN(created_at) AS t FROM login_codes WHERE ${where} AND created_at > $2`, [value, now - HOUR_MS])
    const wait = Math.max(1, Math.ceil((Number(oldest?.t ?? now) + HOUR_MS - now) / 1000))
    return new RateLimitedError(`too many login codes sent to ${what} this hour; try again in ${Math.ceil(wait / 60)} min`, wait)
  }

  /**
   * Checks `code` against this login's newest code: one try used, compared in constant time.
   * Right: the code is used up and the account's user ID returned.
   */
  async verify(input: { interactionUid: string; code: string; now?: number }): Promise<{ userId: string; phone: string }> {
    const { db } = this.#deps
    const now = input.now ?? Date.now()
    const row = await db.get<CodeRow>(`SELECT id, phone, code_mac, attempts, expires_at, used_at FROM login_codes
      WHERE interaction_uid = $1 ORDER BY created_at DESC LIMIT 1`, [input.interactionUid])
    const expired = () => new LoginCodeExpiredError('this code has expired or was used up: ask for a new one', { field: 'code' })
    if (row === undefined) throw new LoginCodeExpiredError('no code was sent for this login: ask for one first', { field: 'code' })
    if (row.used_at !== null || Number(row.expires_at) <= now || Number(row.attempts) >= MAX_ATTEMPTS) throw expired()
    // Count the try first (atomically): parallel guesses cannot get past the limit.
    const counted = await db.run('UPDATE login_codes SET attempts = attempts + 1 WHERE id = $1 AND used_at IS NULL AND attempts < $2', [row.id, MAX_ATTEMPTS])
    if (counted === 0) throw expired()
    const attemptsLeft = MAX_ATTEMPTS - (Number(row.attempts) + 1)
    const given = Buffer.from(this.#mac('code', `${row.id}\0${/^\d{6}$/.test(input.code) ? input.code : ''}`), 'hex')
    const stored = Buffer.from(row.code_mac, 'hex')
    const wrong = () => new LoginCodeInvalidError(`wrong code; ${attemptsLeft} ${attemptsLeft === 1 ? 'try' : 'tries'} left`, attemptsLeft)
    if (given.length !== stored.length || !timingSafeEqual(given, stored)) throw attemptsLeft > 0 ? wrong() : expired()
    const used = await db.run('UPDATE login_codes SET used_at = $2 WHERE id = $1 AND used_at IS NULL', [row.id, now])
    if (used === 0) throw expired()
    const userId = await findUserIdByPhone(db, row.phone)
    // No account: no code was ever sent, so only a guess gets here; it is answered as one.
    if (userId === null) throw wrong()
    return { userId, phone: row.phone }
  }

  /** Codes past any limit window are of no further use. */
  async sweep(now = Date.now()): Promise<number> {
    return this.#deps.db.run('DELETE FROM login_codes WHERE created_at < $1', [now - 2 * HOUR_MS])
  }
}
