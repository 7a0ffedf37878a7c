import type { Executor } from '../db/engine.ts'
import { claimProblem, ZKLOGIN_LIMITS } from '../lib/zklogin-limits.ts'

/**
 * The claims of a user's id_token, fit for zkLogin: `sub` is the user's ID (the key claim of
 * the zkAddress), the number as `preferred_username` and `phone_number` (verified: a token is
 * issued only after a code sent to it came back), and the e-mail given at registration with
 * `email_verified: false` (nothing here verifies a mailbox; relying parties must not trust it).
 * A value the circuit could not prove (a JSON escape, too long) is left out rather than
 * making the whole token unprovable.
 */
export interface AccountClaims {
  [claim: string]: unknown
  sub: string
  preferred_username?: string
  phone_number?: string
  phone_number_verified?: boolean
  email?: string
  email_verified?: boolean
}

interface UserRow { user_id: string; phone: string; email: string }

/** Longest e-mail claim kept: within the circuit's room for any one extra claim. */
const MAX_EMAIL_CLAIM = 100

export async function findAccountClaims(db: Executor, userId: string): Promise<AccountClaims | null> {
  if (typeof userId !== 'string' || userId.length === 0 || userId.length > ZKLOGIN_LIMITS.keyClaimValue) return null
  const user = await db.get<UserRow>('SELECT user_id, phone, email FROM users WHERE user_id = $1', [userId])
  if (user === undefined) return null
  const claims: AccountClaims = { sub: user.user_id, preferred_username: user.phone, phone_number: user.phone, phone_number_verified: true }
  if (user.email !== '' && claimProblem('email', user.email, MAX_EMAIL_CLAIM) === null) {
    claims.email = user.email
    claims.email_verified = false
  }
  return claims
}

/** The user a verified number logs in as, or null when the number has no account. */
export async function findUserIdByPhone(db: Executor, phone: string): Promise<string | null> {
  const row = await db.get<{ user_id: string }>('SELECT user_id FROM users WHERE phone = $1', [phone])
  return row?.user_id ?? null
}
