import { randomUUID } from 'node:crypto'
import type { Database, Executor } from '../db/engine.ts'
import { isUniqueViolation } from '../db/engine.ts'
import { ConflictError, LedgerUnsupportedError } from '../errors.ts'
import type { Ledger } from '../ledger/ledger.ts'
import { findByPhone, linkNumber } from './numbers.ts'
import { canonicalPhone } from './phone.ts'
import { zkLoginAddressFor } from './zk-address.ts'

export interface Identifier { type: 'email' | 'phone'; identifier: string }

export interface Registration {
  created: boolean
  userId: string
  identifiers: Identifier[]
  zkAddress: string
  /** The number's KNS token, when it has one (always on the embedded ledger). */
  objectId: string | null
}

export interface RegistrationDeps {
  db: Database
  ledger: Ledger
  secret: Buffer
  zkLoginIssuer: string
  zkLoginClientId: string
}

interface UserRow { user_id: string; phone: string; email: string; email_normalized: string; zk_address: string }

/** E-mail addresses compare case-insensitively; the first spelling is kept for display. */
function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

async function existingUser(db: Executor, phone: string): Promise<UserRow | undefined> {
  return db.get<UserRow>('SELECT user_id, phone, email, email_normalized, zk_address FROM users WHERE phone = $1', [phone])
}

/**
 * "Register or log in" a phone-number identity. The phone number is the identity: the same
 * number always yields the same user, identifiers and zkLogin address. A number already
 * registered with another e-mail is never taken over (409), and nothing about it changes.
 */
export async function registerOrLogin(deps: RegistrationDeps, input: { email: string; phoneNumber: string }): Promise<Registration> {
  const phone = canonicalPhone(input.phoneNumber)
  const email = input.email.trim()
  const emailNormalized = normalizeEmail(email)

  const known = await existingUser(deps.db, phone)
  if (known !== undefined) return login(deps, known, emailNormalized)

  const userId = randomUUID()
  const zkAddress = zkLoginAddressFor(deps.secret, deps.zkLoginIssuer, deps.zkLoginClientId, userId)
  try {
    const objectId = await deps.db.transaction(async (tx) => {
      await tx.run('INSERT INTO users (user_id, phone, email, email_normalized, zk_address, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [userId, phone, email, emailNormalized, zkAddress, Date.now()])
      return mintFirstToken(deps.ledger, tx, phone, zkAddress)
    })
    return { created: true, userId, identifiers: identifiersOf(email, phone), zkAddress, objectId }
  } catch (err) {
    // Lost a race with a concurrent registration of the same number: answer as a login.
    if (!isUniqueViolation(err)) throw err
    const winner = await existingUser(deps.db, phone)
    if (winner === undefined) throw err
    return login(deps, winner, emailNormalized)
  }
}

async function login(deps: RegistrationDeps, user: UserRow, emailNormalized: string): Promise<Registration> {
  if (user.email_normalized !== emailNormalized) {
    throw new ConflictError('this phone number is already registered with a different e-mail address')
  }
  const link = await findByPhone(deps.db, user.phone)
  return { created: false, userId: user.user_id, identifiers: identifiersOf(user.email, user.phone), zkAddress: user.zk_address, objectId: link?.objectId ?? null }
}

/**
 * A number registered for the first time gets a KNS token minted to its zkLogin address,
 * in the same transaction as the user, so approvals work at once. A number an operator
 * already linked keeps its token. A ledger that cannot mint (Sui) leaves the link to the
 * operator (`kns token link`).
 */
async function mintFirstToken(ledger: Ledger, tx: Executor, phone: string, owner: string): Promise<string | null> {
  const linked = await findByPhone(tx, phone)
  if (linked !== null) return linked.objectId
  try {
    const token = await ledger.mintToken(owner, tx)
    await linkNumber(tx, phone, token.objectId, 'minted')
    return token.objectId
  } catch (err) {
    if (err instanceof LedgerUnsupportedError) return null
    throw err
  }
}

function identifiersOf(email: string, phone: string): Identifier[] {
  return [{ type: 'email', identifier: email }, { type: 'phone', identifier: phone }]
}
