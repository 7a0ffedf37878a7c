import { generateKeyPairSync, sign } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { canonicalPhone, isE164 } from '../identity/phone.ts'
import { findByPhone } from '../identity/numbers.ts'
import { verifyCall } from '../caller/verify-call.ts'
import { NotFoundError, ValidationError } from '../errors.ts'
import { OBJECT_ID_PATTERN } from '../ledger/ledger.ts'
import { LocalLedger } from '../ledger/local-ledger.ts'
import type { Service } from '../service.ts'
import { optional, required, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'
import { defaultKeyId } from '../caller/keys.ts'

function localLedger(service: Service, command: string): LocalLedger {
  if (!(service.ledger instanceof LocalLedger)) throw new UsageError(`'${command}' works on the embedded ledger only (LEDGER=local)`)
  return service.ledger
}

function objectIdArg(value: string | undefined, what: string): string {
  if (value === undefined) throw new UsageError(`${what} is required`)
  if (!OBJECT_ID_PATTERN.test(value)) throw new ValidationError(`${what} must be 0x followed by 64 hex digits`)
  return value.toLowerCase()
}

function phoneArg(value: string, what: string): string {
  if (!isE164(value)) throw new ValidationError(`${what} must be an E.164 number, got "${value}"`)
  return value
}

function readPem(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    throw new ValidationError(`cannot read ${path}`)
  }
}

/** kns keystore create | add-key | revoke-key | keygen */
export async function keystoreCommand(service: Service | null, sub: string | undefined, { values, positionals }: Parsed, out: Output): Promise<void> {
  if (sub === 'keygen') {
    const prefix = required(values, 'out')
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString()
    writeFileSync(`${prefix}.key.pem`, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
    writeFileSync(`${prefix}.pub.pem`, publicPem)
    const keyId = defaultKeyId(publicPem)
    return out.result({ privateKey: `${prefix}.key.pem`, publicKey: `${prefix}.pub.pem`, keyId },
      `wrote ${prefix}.key.pem (private, keep it safe) and ${prefix}.pub.pem; key ID ${keyId}`)
  }
  const keystores = localLedger(service!, `kns keystore ${sub ?? ''}`).keystores
  if (sub === 'create') {
    const imageUrl = optional(values, 'image-url')
    const keyId = optional(values, 'key-id')
    const created = await keystores.create({
      name: required(values, 'name'), creator: required(values, 'creator'), publicKey: readPem(required(values, 'public-key')),
      ...(imageUrl === undefined ? {} : { imageUrl }), ...(keyId === undefined ? {} : { keyId }),
    })
    return out.result(created, `created keystore ${created.objectId} with key ${created.keyId}`)
  }
  if (sub === 'add-key') {
    const keystoreId = objectIdArg(positionals[2], '<keystoreId>')
    const keyId = optional(values, 'key-id')
    const added = await keystores.addKey(keystoreId, readPem(required(values, 'public-key')), keyId)
    return out.result({ objectId: keystoreId, keyId: added.keyId }, `added key ${added.keyId} to ${keystoreId}`)
  }
  if (sub === 'revoke-key') {
    const keystoreId = objectIdArg(positionals[2], '<keystoreId>')
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
  const keystores = localLedger(service, `kns registry ${sub}`).keystores
  const phone = optional(values, 'phone')
  const objectIdRaw = optional(values, 'object-id')
  if ((phone === undefined) === (objectIdRaw === undefined)) throw new UsageError('give exactly one of --object-id or --phone')
  let tokenId: string
  if (phone !== undefined) {
    const link = await findByPhone(service.db, canonicalPhone(phoneArg(phone, '--phone')))
    if (link === null) throw new NotFoundError(`${phone} has no number-system token`)
    tokenId = link.objectId
  } else {
    tokenId = objectIdArg(objectIdRaw, '--object-id')
    if ((await service.ledger.getToken(tokenId)) === null) throw new NotFoundError(`no KNS token ${tokenId} on the ledger`)
  }
  const keystoreId = objectIdArg(optional(values, 'keystore'), '--keystore')
  if (sub === 'link') {
    await keystores.link(tokenId, keystoreId)
    return out.result({ objectId: tokenId, keystore: keystoreId, linked: true }, `linked keystore ${keystoreId} to token ${tokenId}`)
  }
  const removed = await keystores.unlink(tokenId, keystoreId)
  out.result({ objectId: tokenId, keystore: keystoreId, linked: false, removed }, removed ? `unlinked keystore ${keystoreId} from token ${tokenId}` : 'there was no such link')
}

/** A PASSporT (SHAKEN profile) signed with ES256 in the JOSE r||s form. */
export function signPassport(input: { orig: string; dest: string; privateKeyPem: string; kid?: string; attest?: string; origid?: string; iat?: number }): string {
  const header: Record<string, unknown> = { alg: 'ES256', typ: 'passport', ppt: 'shaken' }
  if (input.kid !== undefined) header.kid = input.kid
  const payload = {
    attest: input.attest ?? 'A',
    dest: { tn: [input.dest] },
    iat: input.iat ?? Math.floor(Date.now() / 1000),
    orig: { tn: input.orig },
    origid: input.origid ?? crypto.randomUUID(),
  }
  const signingInput = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`
  const signature = sign('sha256', Buffer.from(signingInput), { key: input.privateKeyPem, dsaEncoding: 'ieee-p1363' })
  return `${signingInput}.${signature.toString('base64url')}`
}

/** kns passport sign | verify. Resolves to the exit code: verify exits 1 when not verified. */
export async function passportCommand(service: Service | null, sub: string | undefined, { values }: Parsed, out: Output): Promise<number> {
  const orig = phoneArg(required(values, 'orig'), '--orig')
  const dest = phoneArg(required(values, 'dest'), '--dest')
  if (sub === 'sign') {
    const iatRaw = optional(values, 'iat')
    if (iatRaw !== undefined && !/^\d+$/.test(iatRaw)) throw new UsageError('--iat must be seconds since the epoch')
    const attest = optional(values, 'attest')
    if (attest !== undefined && !['A', 'B', 'C'].includes(attest)) throw new UsageError('--attest must be A, B or C')
    const kid = optional(values, 'kid')
    const origid = optional(values, 'origid')
    const jwt = signPassport({
      orig, dest, privateKeyPem: readPem(required(values, 'key')),
      ...(kid === undefined ? {} : { kid }), ...(attest === undefined ? {} : { attest }),
      ...(origid === undefined ? {} : { origid }), ...(iatRaw === undefined ? {} : { iat: Number(iatRaw) }),
    })
    out.result({ jwt }, jwt)
    return 0
  }
  if (sub === 'verify') {
    const verdict = await verifyCall({
      directory: service!.keyDirectory, origTN: orig, destTN: dest, jwt: required(values, 'jwt'),
      maxAgeS: service!.config.callMaxAgeS, nowS: Math.floor(Date.now() / 1000),
    })
    const lines = verdict.steps.map((s) => `${s.ok ? 'ok  ' : 'FAIL'} ${s.name}${s.detail ? `: ${s.detail}` : ''}`)
    out.result({ success: verdict.success, ...(verdict.reason === undefined ? {} : { reason: verdict.reason }), steps: verdict.steps },
      [...lines, verdict.success ? 'verified' : `not verified: ${verdict.reason}`].join('\n'))
    return verdict.success ? 0 : 1
  }
  throw new UsageError(`unknown command 'kns passport ${sub ?? ''}'`)
}
