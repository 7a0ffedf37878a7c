/**
 * `kns oidc repin-issuer [--issuer <URL>]`: the operator's way out of a development issuer
 * (http://localhost:$PORT/oidc, pinned by a first start with the defaults) while no zkLogin
 * address has been handed out. Run on the database directly, not through openService, whose
 * start-up check would refuse the very ZKLOGIN_ISSUER being moved to.
 * docs/operations.md, The zkLogin issuer.
 */
import type { Config } from '../config.ts'
import { openCheckedDatabase } from '../db/open.ts'
import { getSetting } from '../db/settings.ts'
import { ConfigError, ConflictError } from '../errors.ts'
import { readPinnedIdentity, repinIssuer } from '../identity/issuer-pin.ts'
import { issuerValue } from '../lib/config-values.ts'
import { optional, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'

/** --issuer, else ZKLOGIN_ISSUER, else the public URL (PUBLIC_BASE_URL, or the kept one) + /oidc. */
function targetIssuer(config: Config, given: string | undefined, keptPublicBaseUrl: string | undefined): { issuer: string; defaultOf: string | null } {
  try {
    if (given !== undefined) return { issuer: issuerValue(given, '--issuer'), defaultOf: null }
    if (config.zkLoginIssuerSet) return { issuer: config.zkLoginIssuer, defaultOf: null }
    const base = config.publicBaseUrlSet ? config.publicBaseUrl : keptPublicBaseUrl ?? config.publicBaseUrl
    return { issuer: issuerValue(`${base}/oidc`, 'PUBLIC_BASE_URL + /oidc'), defaultOf: base }
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message)
    throw err
  }
}

export async function repinIssuerCommand(config: Config, { values }: Parsed, out: Output): Promise<void> {
  const db = await openCheckedDatabase(config, 'tool')
  try {
    const pinned = await readPinnedIdentity(db)
    if (pinned === undefined) throw new ConflictError('no zkLogin issuer is pinned yet: the first start pins ZKLOGIN_ISSUER (or $PUBLIC_BASE_URL/oidc); set it before that start')
    const { issuer: target, defaultOf } = targetIssuer(config, optional(values, 'issuer'), await getSetting(db, 'public_base_url'))
    if (config.zkLoginIssuerSet && target !== config.zkLoginIssuer) {
      throw new UsageError(`ZKLOGIN_ISSUER is set to ${config.zkLoginIssuer}, and a server with it would refuse the new pin ${target}: set ZKLOGIN_ISSUER=${target} (or unset it)`)
    }
    if (target === pinned.issuer) {
      return out.result({ issuer: target, previous: target, changed: false }, `the zkLogin issuer is already ${target}: nothing changed`)
    }
    await repinIssuer(db, pinned.issuer, target, defaultOf)
    out.result({ issuer: target, previous: pinned.issuer, changed: true },
      `zkLogin issuer re-pinned from ${pinned.issuer} to ${target}. Restart every server on this database: until then they refuse registrations ` +
      `(they serve the old issuer). Serve the provider at ${target} (PUBLIC_BASE_URL's origin, or route that path to this service)`)
  } finally {
    await db.close()
  }
}
