import { randomUUID } from 'node:crypto'
import type { Database, Executor } from '../db/engine.ts'
import { isUniqueViolation } from '../db/engine.ts'
import { LedgerUnsupportedError } from '../errors.ts'
import { AnswerFloor } from '../lib/answer-floor.ts'
import type { Ledger } from '../ledger/ledger.ts'
import type { AddressWorkers } from './address-workers.ts'
import { confirmIssuerPin } from './issuer-pin.ts'
import { findByPhone, linkNumber } from './numbers.ts'
import { canonicalPhone } from './phone.ts'
import { zkLoginAddressFor } from './zk-address.ts'

export interface Identifier { type: 'email' | 'phone'; identifier: string }

export interface Registration {
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
  /**
   * Holds every answer until new registrations' usual time (see AnswerFloor), so the time
   * does not tell a registered number from a new one. The HTTP route sets it; seeding does not.
   */
  answerFloor?: AnswerFloor
  /**
   * Derives new registrations' addresses off the event loop, and bounds the registrations in
   * progress (see AddressWorkers). The HTTP route sets it; seeding derives inline.
   */
  addressWorkers?: AddressWorkers
}

/**
 * register-user-login's answer floor. 20 ms at least: above a new registration's whole work
 * on an unloaded server (3-10 ms on either engine, most of it the durable commit on
 * PostgreSQL), so even a fresh process shows nothing; above that, the 95th percentile of the
 * last 64 new registrations (a loaded machine or a slow disk); at most 1 s.
 */
export function registrationAnswerFloor(): AnswerFloor {
  return new AnswerFloor({ minMs: 20, maxMs: 1000, window: 64, quantile: 0.95 })
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
 * "Register or log in" a phone-number identity. The phone number is the identity, and control
 * of it follows the one-time codes sent to the number (src/accounts/login-codes.ts), never
 * this call: it creates the number's account once (user ID, zkAddress, the token minted to it)
 * and after that changes nothing. The e-mail given is kept only when it creates the account,
 * unverified; an e-mail given for a registered number binds nothing.
 *
 * So the answer is the same whether or not the number was registered: same status, the same
 * message, the account's userId and zkAddress (a new one cannot be told from an old one), and
 * the identifiers this request named. Nothing stored about an account (its e-mail) is shown.
 * Nor does its time tell: with `answerFloor`, both kinds are held until the floor that new
 * registrations' work sets. See docs/api.md, "Registration".
 */
export async function registerOrLogin(deps: RegistrationDeps, input: { email: string; phoneNumber: string }, client = ''): Promise<Registration> {
  // Counted before anything is looked up and until the answer is ready, registered number or
  // not, so neither a 503 under load nor its time tells anything about the number.
  const release = deps.addressWorkers?.enter(client)
  try {
    const floor = deps.answerFloor
    const started = floor?.start()
    // The threads' start (~0.25 s, when `kns serve` did not start them) is not new registrations' usual time.
    const cold = deps.addressWorkers?.warm === false
    const { registration, created } = await registerOrFind(deps, input)
    if (floor !== undefined && started !== undefined) {
      if (created && !cold) floor.slow(started)
      await floor.hold(started)
    }
    return registration
  } finally {
    release?.()
  }
}

function deriveAddress(deps: RegistrationDeps, userId: string): Promise<string> | string {
  if (deps.addressWorkers !== undefined) return deps.addressWorkers.derive(deps.zkLoginIssuer, deps.zkLoginClientId, userId)
  return zkLoginAddressFor(deps.secret, deps.zkLoginIssuer, deps.zkLoginClientId, userId)
}

async function registerOrFind(deps: RegistrationDeps, input: { email: string; phoneNumber: string }): Promise<{ registration: Registration; created: boolean }> {
  const phone = canonicalPhone(input.phoneNumber)
  const email = input.email.trim()
  const identifiers = identifiersOf(email, phone)

  const known = await existingUser(deps.db, phone)
  if (known !== undefined) return { registration: await answer(deps, known, identifiers), created: false }

  // The slow kind: the address's derivation (HMAC, then the zkLogin address's Poseidon hash,
  // 2-5 ms of CPU, on a worker thread when served over HTTP), the inserts, the mint and a
  // durable commit. Not repeated on the fast path to match it: the answer floor hides it, and
  // CPU is what a flood of registrations spends.
  const userId = randomUUID()
  const zkAddress = await deriveAddress(deps, userId)
  try {
    const objectId = await deps.db.transaction(async (tx) => {
      await confirmIssuerPin(tx, deps.zkLoginIssuer)
      await tx.run('INSERT INTO users (user_id, phone, email, email_normalized, zk_address, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [userId, phone, email, normalizeEmail(email), zkAddress, Date.now()])
      return mintFirstToken(deps.ledger, tx, phone, zkAddress)
    })
    return { registration: { userId, identifiers, zkAddress, objectId }, created: true }
  } catch (err) {
    // Lost a race with a concurrent registration of the same number: the same answer as the winner's.
    if (!isUniqueViolation(err)) throw err
    const winner = await existingUser(deps.db, phone)
    if (winner === undefined) throw err
    return { registration: await answer(deps, winner, identifiers), created: false }
  }
}

/** The answer for a number registered before (by this call's lost race, or earlier). */
async function answer(deps: RegistrationDeps, user: UserRow, identifiers: Identifier[]): Promise<Registration> {
  const link = await findByPhone(deps.db, user.phone)
  return { userId: user.user_id, identifiers, zkAddress: user.zk_address, objectId: link?.objectId ?? null }
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
