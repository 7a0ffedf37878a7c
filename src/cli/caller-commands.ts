import { generateKeyPairSync, sign } from 'node:crypto'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, sep } from 'node:path'
import { loadDotEnv } from '../config.ts'
import { divClaimsSet } from '../caller/shaken/sign-passport.ts'
import { canonicalPhone } from '../identity/phone.ts'
import { findByPhone } from '../identity/numbers.ts'
import { ConflictError, NotFoundError } from '../errors.ts'
import type { Service } from '../service.ts'
import { optional, required, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'
import { e164Value, embeddedLedger, objectIdValue, readTextFile } from './values.ts'
import { defaultKeyId } from '../lib/public-keys.ts'

/**
 * Where `keygen --out` writes: a bare name goes under $DATA_DIR/keys/ (kept out of the
 * working tree, next to the database); anything with a directory in it, where it says.
 */
function keyFilePrefix(out: string): string {
  if (out.includes('/') || out.includes(sep)) return out
  loadDotEnv()
  // DATA_DIR alone (as loadConfig reads it): an unrelated bad setting must not stop a keygen.
  return join(process.env.DATA_DIR || './data', 'keys', out)
}

/** kns keystore create | add-key | revoke-key | keygen */
export async function keystoreCommand(service: Service | null, sub: string | undefined, { values, positionals }: Parsed, out: Output): Promise<void> {
  if (sub === 'keygen') {
    const prefix = keyFilePrefix(required(values, 'out'))
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString()
    for (const path of [`${prefix}.key.pem`, `${prefix}.pub.pem`]) {
      if (existsSync(path)) throw new ConflictError(`${path} exists: keygen never overwrites a key (choose another --out, or move it away)`)
    }
    mkdirSync(dirname(prefix), { recursive: true, mode: 0o700 })
    // 'wx': created here or not at all, even if another process wrote it meanwhile.
    writeFileSync(`${prefix}.key.pem`, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' })
    try {
      writeFileSync(`${prefix}.pub.pem`, publicPem, { flag: 'wx' })
    } catch (err) {
      rmSync(`${prefix}.key.pem`) // a pair or nothing: a private key without its public half is of no use
      throw (err as NodeJS.ErrnoException).code === 'EEXIST' ? new ConflictError(`${prefix}.pub.pem exists: keygen never overwrites a key`) : err
    }
    const keyId = defaultKeyId(publicPem)
    return out.result({ privateKey: `${prefix}.key.pem`, publicKey: `${prefix}.pub.pem`, keyId },
      `wrote ${prefix}.key.pem (private, keep it safe) and ${prefix}.pub.pem; key ID ${keyId}`)
  }
  const keystores = embeddedLedger(service!, `kns keystore ${sub ?? ''}`).keystores
  if (sub === 'create') {
    const imageUrl = optional(values, 'image-url')
    const keyId = optional(values, 'key-id')
    const created = await keystores.create({
      name: required(values, 'name'), creator: required(values, 'creator'), publicKey: readTextFile(required(values, 'public-key')),
      ...(imageUrl === undefined ? {} : { imageUrl }), ...(keyId === undefined ? {} : { keyId }),
    })
    return out.result(created, `created keystore ${created.objectId} with key ${created.keyId}`)
  }
  if (sub === 'add-key') {
    const keystoreId = objectIdValue(positionals[2], '<keystoreId>')
    const keyId = optional(values, 'key-id')
    const added = await keystores.addKey(keystoreId, readTextFile(required(values, 'public-key')), keyId)
    return out.result({ objectId: keystoreId, keyId: added.keyId }, `added key ${added.keyId} to ${keystoreId}`)
  }
  if (sub === 'revoke-key') {
    const keystoreId = objectIdValue(positionals[2], '<keystoreId>')
    const keyId = positionals[3]
    if (keyId === undefined) throw new UsageError('usage: kns keystore revoke-key <keystoreId> <keyId>')
    await keystores.revokeKey(keystoreId, keyId)
    return out.result({ objectId: keystoreId, keyId, revoked: true }, `revoked key ${keyId} of ${keystoreId}`)
  }
  throw new UsageError(`unknown command 'kns keystore ${sub ?? ''}'`)
}

/** kns registry link | unlink (--object-id <token> | --phone <+E164>) --keystore <id> */
export async function registryCommand(service: Service, sub: string | undefined, { values }: Parsed, out: Output): Promise<void> {
  if (sub !== 'link' && sub !== 'unlink') throw new UsageError(`unknown command 'kns registry ${sub ?? ''}'`)
  const keystores = embeddedLedger(service, `kns registry ${sub}`).keystores
  const phone = optional(values, 'phone')
  const objectIdRaw = optional(values, 'object-id')
  if ((phone === undefined) === (objectIdRaw === undefined)) throw new UsageError('give exactly one of --object-id or --phone')
  let tokenId: string
  if (phone !== undefined) {
    const link = await findByPhone(service.db, canonicalPhone(e164Value(phone, '--phone')))
    if (link === null) throw new NotFoundError(`${phone} has no number-system token`)
    tokenId = link.objectId
  } else {
    tokenId = objectIdValue(objectIdRaw, '--object-id')
    if ((await service.ledger.getToken(tokenId)) === null) throw new NotFoundError(`no KNS token ${tokenId} on the ledger`)
  }
  const keystoreId = objectIdValue(optional(values, 'keystore'), '--keystore')
  if (sub === 'link') {
    await keystores.link(tokenId, keystoreId)
    return out.result({ objectId: tokenId, keystore: keystoreId, linked: true }, `linked keystore ${keystoreId} to token ${tokenId}`)
  }
  const removed = await keystores.unlink(tokenId, keystoreId)
  out.result({ objectId: tokenId, keystore: keystoreId, linked: false, removed }, removed ? `unlinked keystore ${keystoreId} from token ${tokenId}` : 'there was no such link')
}

/**
 * A PASSporT signed with a local key, ES256 in the JOSE r||s form: `ppt: shaken` for the
 * caller's provider, or with `div` (the number the call was diverted from) a `ppt: div`
 * PASSporT for a diverting provider, with the claims the STI-AS signs (`divClaimsSet`).
 */
export function signPassport(input: { orig: string; dest: string; privateKeyPem: string; kid?: string; attest?: string; origid?: string; iat?: number; div?: string }): string {
  const header: Record<string, unknown> = { alg: 'ES256', typ: 'passport', ppt: input.div === undefined ? 'shaken' : 'div' }
  if (input.kid !== undefined) header.kid = input.kid
  const iat = input.iat ?? Math.floor(Date.now() / 1000)
  const payload = input.div === undefined
    ? { attest: input.attest ?? 'A', dest: { tn: [input.dest] }, iat, orig: { tn: input.orig }, origid: input.origid ?? crypto.randomUUID() }
    : divClaimsSet({ dest: [input.dest], div: input.div, iat, orig: input.orig })
  const signingInput = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`
  const signature = sign('sha256', Buffer.from(signingInput), { key: input.privateKeyPem, dsaEncoding: 'ieee-p1363' })
  return `${signingInput}.${signature.toString('base64url')}`
}

/** kns passport sign | verify. Resolves to the exit code: verify exits 1 when not verified. */
export async function passportCommand(service: Service | null, sub: string | undefined, { values }: Parsed, out: Output): Promise<number> {
  const orig = e164Value(required(values, 'orig'), '--orig')
  const dest = e164Value(required(values, 'dest'), '--dest')
  if (sub === 'sign') {
    const iatRaw = optional(values, 'iat')
    if (iatRaw !== undefined && !/^\d+$/.test(iatRaw)) throw new UsageError('--iat must be seconds since the epoch')
    const attest = optional(values, 'attest')
    if (attest !== undefined && !['A', 'B', 'C'].includes(attest)) throw new UsageError('--attest must be A, B or C')
    const kid = optional(values, 'kid')
    const origid = optional(values, 'origid')
    const divRaw = optional(values, 'div')
    if (divRaw !== undefined && (attest !== undefined || origid !== undefined)) {
      throw new UsageError('--attest and --origid belong to a shaken PASSporT; a div PASSporT (--div) carries neither')
    }
    const jwt = signPassport({
      orig, dest, privateKeyPem: readTextFile(required(values, 'key')),
      ...(divRaw === undefined ? {} : { div: e164Value(divRaw, '--div') }),
      ...(kid === undefined ? {} : { kid }), ...(attest === undefined ? {} : { attest }),
      ...(origid === undefined ? {} : { origid }), ...(iatRaw === undefined ? {} : { iat: Number(iatRaw) }),
    })
    out.result({ jwt }, jwt)
    return 0
  }
  if (sub === 'verify') {
    // What call-signature-verification does with the same input: this service's trust sources
    // (CALLER_TRUST: ledger keys, x5u certificates) and limits, one PASSporT or a diverted call's
    // Identity headers.
    const jwt = optional(values, 'jwt')
    const identity = values.identity as string[] | undefined
    if ((jwt === undefined) === (identity === undefined)) throw new UsageError('give either --jwt <jwt> or --identity <header value> (repeated for a diverted call\'s headers)')
    const verdict = await service!.callVerifier.verify({
      origTN: orig, destTN: dest, jwt: jwt ?? '', ...(identity === undefined ? {} : { identity: identity.length === 1 ? identity[0]! : identity }),
    })
    const lines = verdict.steps.map((s) => `${s.ok ? 'ok  ' : 'FAIL'} ${s.name}${s.detail ? `: ${s.detail}` : ''}`)
    const diversions = (verdict.div ?? []).map((d) => `diverted from ${d.from} to ${d.to.join(', ')} (${d.trust})`)
    const report = {
      success: verdict.success, ...(verdict.reason === undefined ? {} : { reason: verdict.reason }),
      ...(verdict.trust === undefined ? {} : { trust: verdict.trust }), ...(verdict.div === undefined ? {} : { div: verdict.div }),
      steps: verdict.steps,
    }
    out.result(report, [...lines, ...diversions, verdict.success ? `verified (${verdict.trust})` : `not verified: ${verdict.reason}`].join('\n'))
    return verdict.success ? 0 : 1
  }
  throw new UsageError(`unknown command 'kns passport ${sub ?? ''}'`)
}
