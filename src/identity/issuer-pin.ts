/**
 * The pinned zkLogin identity (issuer and client ID): every zkAddress derives from it, so the
 * database keeps the first one used, and a start with another is refused. While no address
 * has been handed out (no row in `users`: a registration is the only step that derives one),
 * the issuer may still move: at start when it is the default an older PUBLIC_BASE_URL gave and
 * PUBLIC_BASE_URL has changed, or by `kns oidc repin-issuer`. Both re-pin in one transaction
 * that a registration's own (confirmIssuerPin) excludes, so no address is ever derived from an
 * issuer the database no longer pins. docs/operations.md, The zkLogin issuer.
 */
import type { Config } from '../config.ts'
import type { Database, Executor } from '../db/engine.ts'
import { getSetting } from '../db/settings.ts'
import { ConfigError, ConflictError } from '../errors.ts'

const SETTING = 'zklogin_identity'
/**
 * The public URL the pinned issuer is the default of (`<url>/oidc`), when it was pinned or
 * re-pinned as a default; absent when it was given explicitly (or pinned before this was kept:
 * then the URL the database keeps stands in for it, see pinnedFrom).
 */
const DEFAULT_OF = 'zklogin_issuer_default_of'

export interface PinnedIdentity { issuer: string; clientId: string }

/** What a server start does with the pin: see pinDecision. */
export type PinDecision =
  | { kind: 'pin'; issuer: string }
  | { kind: 'keep'; issuer: string }
  | { kind: 'repin'; from: string; issuer: string }
  | { kind: 'refuse'; message: string }

export async function readPinnedIdentity(db: Executor): Promise<PinnedIdentity | undefined> {
  const value = await getSetting(db, SETTING)
  if (value === undefined) return undefined
  const [issuer, clientId] = JSON.parse(value) as [string, string]
  return { issuer, clientId }
}

/** The public URL whose default the pinned issuer is (see DEFAULT_OF), for pinDecision. */
export async function pinnedFrom(db: Executor): Promise<string | undefined> {
  return await getSetting(db, DEFAULT_OF) ?? await getSetting(db, 'public_base_url')
}

/** True once any zkLogin address has been handed out (a registered number). */
export async function addressesHandedOut(db: Executor): Promise<boolean> {
  return (await db.get('SELECT user_id FROM users LIMIT 1')) !== undefined
}

/**
 * What a start with this configuration does with the pin, judged on what the database holds
 * (the pin, the public URL it keeps, whether an address exists). One judgement for the server
 * (src/service.ts) and `kns doctor`, so that the doctor says what the start will do.
 */
export function pinDecision(config: Config, pinned: PinnedIdentity | undefined, pinnedFrom: string | undefined, handedOut: boolean): PinDecision {
  if (pinned === undefined) return { kind: 'pin', issuer: config.zkLoginIssuer }
  const differs = (config.zkLoginIssuerSet && config.zkLoginIssuer !== pinned.issuer) || config.zkLoginClientId !== pinned.clientId
  if (differs) {
    return {
      kind: 'refuse',
      message: `ZKLOGIN_ISSUER/ZKLOGIN_CLIENT_ID differ from the values this database was created with ` +
        `(${pinned.issuer}, ${pinned.clientId}); changing them would change every user's zkAddress` +
        (handedOut || config.zkLoginClientId !== pinned.clientId ? '' : '. No address has been handed out yet: `kns oidc repin-issuer` moves the issuer'),
    }
  }
  // The default an older PUBLIC_BASE_URL gave, while PUBLIC_BASE_URL now says another: follow it.
  const followsOldUrl = !config.zkLoginIssuerSet && config.publicBaseUrlSet && pinnedFrom !== undefined &&
    pinnedFrom !== config.publicBaseUrl && pinned.issuer === `${pinnedFrom}/oidc`
  if (followsOldUrl && !handedOut) return { kind: 'repin', from: pinned.issuer, issuer: config.zkLoginIssuer }
  return { kind: 'keep', issuer: pinned.issuer }
}

/**
 * Moves the pinned issuer from `from` to `to`, unless an address exists: on PostgreSQL the pin's
 * row is locked first, so a registration in flight (which holds it shared) commits before the
 * check for addresses reads, and one that starts later waits and then sees the new pin; SQLite
 * runs one write transaction at a time.
 */
export async function repinIssuer(db: Database, from: string, to: string, defaultOf: string | null): Promise<void> {
  await db.transaction(async (tx) => {
    const lock = tx.engine === 'postgres' ? ' FOR UPDATE' : ''
    const row = await tx.get<{ value: string }>(`SELECT value FROM settings WHERE name = $1${lock}`, [SETTING])
    const [issuer, clientId] = row === undefined ? [] : JSON.parse(row.value) as [string, string]
    if (issuer !== from) throw new ConflictError(`the pinned zkLogin issuer is ${issuer ?? 'not set'}, not ${from}: nothing changed`)
    if (await addressesHandedOut(tx)) {
      throw new ConflictError(`the zkLogin issuer ${from} cannot change any more: zkLogin addresses have been handed out (registered numbers), ` +
        'and a new issuer would give each of them a new, empty address')
    }
    await tx.run('UPDATE settings SET value = $1 WHERE name = $2', [JSON.stringify([to, clientId]), SETTING])
    await recordDefaultOf(tx, defaultOf)
  })
}

/**
 * In a registration's transaction, before its user is stored: the issuer this process derived
 * the address from is still the pinned one (a re-pin since this server started would make it
 * an address of an issuer nobody serves). PostgreSQL: holds the pin's row shared until commit.
 */
export async function confirmIssuerPin(tx: Executor, issuer: string): Promise<void> {
  const lock = tx.engine === 'postgres' ? ' FOR SHARE' : ''
  const row = await tx.get<{ value: string }>(`SELECT value FROM settings WHERE name = $1${lock}`, [SETTING])
  const pinned = row === undefined ? undefined : (JSON.parse(row.value) as [string, string])[0]
  if (pinned !== undefined && pinned !== issuer) {
    throw new ConflictError(`the zkLogin issuer was re-pinned to ${pinned} after this server started with ${issuer}: restart it to register numbers`)
  }
}

/**
 * At start: pin on a new database, follow PUBLIC_BASE_URL while nothing was handed out, or
 * refuse a configuration that would change every address. Sets config.zkLoginIssuer to the
 * issuer in effect; a re-pin is reported in `warnings` (logged at start).
 */
export async function resolveIssuerPin(db: Database, config: Config, role: 'server' | 'tool', warnings: string[]): Promise<void> {
  const pinned = await readPinnedIdentity(db)
  let decision = pinDecision(config, pinned, await pinnedFrom(db), pinned !== undefined && await addressesHandedOut(db))
  if (decision.kind === 'refuse') throw new ConfigError(decision.message)
  if (decision.kind === 'pin') {
    const inserted = await db.run('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [SETTING, JSON.stringify([config.zkLoginIssuer, config.zkLoginClientId])])
    if (inserted > 0) await recordDefaultOf(db, config.zkLoginIssuerSet ? null : config.publicBaseUrl)
    // Another process may have pinned first: judge again against what won.
    const won = await readPinnedIdentity(db)
    if (won!.issuer !== config.zkLoginIssuer || won!.clientId !== config.zkLoginClientId) return resolveIssuerPin(db, config, role, warnings)
    return
  }
  // Only a server start moves the pin by itself, never a one-off command run with the new URL.
  if (decision.kind === 'repin' && role === 'tool') decision = { kind: 'keep', issuer: decision.from }
  if (decision.kind === 'repin') {
    try {
      await repinIssuer(db, decision.from, decision.issuer, config.publicBaseUrl)
      warnings.push(`ZKLOGIN_ISSUER re-pinned from ${decision.from} to ${decision.issuer}: PUBLIC_BASE_URL changed and no zkLogin address had been handed out yet`)
    } catch (err) {
      // A registration (or another process's re-pin) won the race: judge again.
      if (!(err instanceof ConflictError)) throw err
      return resolveIssuerPin(db, config, role, warnings)
    }
  }
  config.zkLoginIssuer = decision.issuer
}

async function recordDefaultOf(db: Executor, publicBaseUrl: string | null): Promise<void> {
  if (publicBaseUrl === null) await db.run('DELETE FROM settings WHERE name = $1', [DEFAULT_OF])
  else await db.run('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value', [DEFAULT_OF, publicBaseUrl])
}
