import { createHash } from 'node:crypto'
import { check, CheckFailed, Nested, NOT_APPLICABLE } from '../lib/checks.ts'
import type { PassportContext, VerifiedRcd } from './call-context.ts'
import { FetchFailed } from './shaken/fetch-cache.ts'

/**
 * RFC 9795 Rich Call Data in the call's shaken PASSporT, checked once its signature verified
 * (nothing is fetched for a forgery):
 * - `rcd.nam` (the display name) a string; `rcd.jcd` (an inline jCard) and `rcd.jcl` (an
 *   https URL of one) not both; `rcd.apn`, `rcd.icn` strings when present; `crn` (call
 *   reason) a string claim beside rcd;
 * - `rcdi` (integrity): JSON pointers into rcd, each with `<alg>-<base64 digest>` (sha256,
 *   sha384, sha512). URL-referenced content (`/jcl`, `/icn`, a URL inside jcd) is hashed as
 *   fetched; inline content (a pointer to a value of rcd itself) as its JSON text or, for a
 *   string, its UTF-8 bytes: the PASSporT's signature covers that content already, so either
 *   reading is accepted.
 * The jCard named by `jcl` is fetched through the guarded client (https, public addresses,
 * 64 KiB, 3 s), cached like x5u documents. Only a verified PASSporT's rcd reaches the answer.
 */
const MAX_NAME = 256
const DIGESTS: Record<string, { hash: string; bytes: number }> = {
  sha256: { hash: 'sha256', bytes: 32 }, sha384: { hash: 'sha384', bytes: 48 }, sha512: { hash: 'sha512', bytes: 64 },
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value)

/** RFC 6901: `/a/0/b` with `~1` for `/` and `~0` for `~`; undefined when it leads nowhere. */
function resolvePointer(root: unknown, pointer: string): unknown {
  if (pointer === '') return root
  let node = root
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (Array.isArray(node)) {
      if (!/^(0|[1-9]\d{0,5})$/.test(token)) return undefined
      node = node[Number(token)]
    } else if (isObject(node)) {
      node = Object.hasOwn(node, token) ? node[token] : undefined
    } else return undefined
    if (node === undefined) return undefined
  }
  return node
}

/** `sha256-<base64>` (standard or url-safe alphabet, padding optional) -> algorithm and digest. */
function parseDigest(pointer: string, value: unknown): { hash: string; digest: Buffer } {
  const match = typeof value === 'string' ? /^(sha256|sha384|sha512)-([A-Za-z0-9+/_-]+={0,2})$/.exec(value) : null
  const spec = match === null ? undefined : DIGESTS[match[1]!]
  const digest = match === null ? Buffer.alloc(0) : Buffer.from(match[2]!.replace(/=+$/, '').replaceAll('+', '-').replaceAll('/', '_'), 'base64url')
  if (spec === undefined || digest.length !== spec.bytes) throw new CheckFailed('BAD_RCD', `rcdi ${pointer}: not <sha256|sha384|sha512>-<base64 digest>`)
  return { hash: spec.hash, digest }
}

const hashOf = (hash: string, bytes: Uint8Array | string) => createHash(hash).update(bytes).digest()

async function fetchBytes(ctx: PassportContext, url: string, what: string): Promise<Buffer> {
  if (ctx.jcardCache === undefined) throw new CheckFailed('RCD_FETCH_FAILED', `${what} cannot be fetched here (no certificate trust source)`)
  try {
    return await ctx.jcardCache.get(url)
  } catch (err) {
    if (err instanceof FetchFailed) throw new CheckFailed('RCD_FETCH_FAILED', `${what} <${url}>: ${err.message}`)
    throw err
  }
}

function optionalString(rcd: Record<string, unknown>, key: string, max: number): string | undefined {
  const value = rcd[key]
  if (value === undefined) return undefined
  if (typeof value !== 'string' || value.length > max) throw new CheckFailed('BAD_RCD', `rcd.${key} must be a string of at most ${max} characters`)
  return value
}

/**
 * Rich call data that cannot be verified does not fail the call: its number was verified, and
 * a terminating network then presents the number without the name (ATIS-1000094's rule).
 * The step is reported as failed, with why, and the answer carries no rcd.
 */
export const checkRcd = check<PassportContext>('check_rcd', async (ctx) => {
  const { payload } = ctx.jws!
  if (ctx.kind !== 'shaken' || (payload.rcd === undefined && payload.rcdi === undefined && payload.crn === undefined)) return NOT_APPLICABLE
  try {
    return await verifyRcd(ctx, payload)
  } catch (err) {
    if (!(err instanceof CheckFailed)) throw err
    ctx.rcdFailure = `${err.code}: ${err.message}`
    return new Nested([{ name: 'check_rcd', ok: false, detail: ctx.rcdFailure }])
  }
})

async function verifyRcd(ctx: PassportContext, payload: Record<string, unknown>): Promise<string> {
  const rcd = payload.rcd
  if (!isObject(rcd)) throw new CheckFailed('BAD_RCD', 'rcd must be an object (with nam)')
  const nam = rcd.nam
  if (typeof nam !== 'string' || nam.length > MAX_NAME || /[\u0000-\u001f\u007f]/.test(nam)) {
    throw new CheckFailed('BAD_RCD', `rcd.nam must be a display name: a string of at most ${MAX_NAME} characters without control characters`)
  }
  if (rcd.jcd !== undefined && rcd.jcl !== undefined) throw new CheckFailed('BAD_RCD', 'rcd has both jcd and jcl: one jCard or the other')
  if (rcd.jcd !== undefined && (!Array.isArray(rcd.jcd) || rcd.jcd[0] !== 'vcard')) throw new CheckFailed('BAD_RCD', 'rcd.jcd must be a jCard (RFC 7095: ["vcard", [...]])')
  const jcl = optionalString(rcd, 'jcl', 2048)
  if (jcl !== undefined && !jcl.startsWith('https://')) throw new CheckFailed('BAD_RCD', 'rcd.jcl must be an https URL')
  const apn = optionalString(rcd, 'apn', 32)
  const icn = optionalString(rcd, 'icn', 2048)
  const crn = payload.crn
  if (crn !== undefined && (typeof crn !== 'string' || crn.length > MAX_NAME)) throw new CheckFailed('BAD_RCD', `crn must be a string of at most ${MAX_NAME} characters`)

  let jcard: unknown = rcd.jcd
  let jcardBytes: Buffer | undefined
  if (jcl !== undefined) {
    jcardBytes = await fetchBytes(ctx, jcl, 'the jCard at rcd.jcl')
    try {
      jcard = JSON.parse(jcardBytes.toString('utf8'))
    } catch {
      throw new CheckFailed('BAD_RCD', `the document at rcd.jcl <${jcl}> is not JSON`)
    }
    if (!Array.isArray(jcard) || jcard[0] !== 'vcard') throw new CheckFailed('BAD_RCD', `the document at rcd.jcl <${jcl}> is not a jCard`)
  }

  const rcdi = payload.rcdi
  let checked = 0
  if (rcdi !== undefined) {
    if (!isObject(rcdi) || Object.keys(rcdi).length === 0 || Object.keys(rcdi).length > 16) throw new CheckFailed('BAD_RCD', 'rcdi must be an object of 1-16 JSON pointers into rcd')
    for (const [pointer, value] of Object.entries(rcdi)) {
      if (!pointer.startsWith('/')) throw new CheckFailed('BAD_RCD', `rcdi key ${JSON.stringify(pointer)} is not a JSON pointer`)
      const { hash, digest } = parseDigest(pointer, value)
      // A pointer below /jcl reads into the fetched jCard (RFC 9795: URLs inside it).
      const target = pointer.startsWith('/jcl/') ? resolvePointer(jcard, pointer.slice('/jcl'.length)) : resolvePointer(rcd, pointer)
      if (target === undefined) throw new CheckFailed('RCD_INTEGRITY', `rcdi ${pointer} points at nothing in rcd`)
      let matches: boolean
      // Content by reference: the icon, or a URL inside the jCard (jcd or the one at jcl).
      const referenced = pointer === '/icn' || pointer.startsWith('/jcd/') || pointer.startsWith('/jcl/')
      if (pointer === '/jcl') matches = hashOf(hash, jcardBytes!).equals(digest)
      else if (referenced && typeof target === 'string' && target.startsWith('https://')) {
        matches = hashOf(hash, await fetchBytes(ctx, target, `the content at ${pointer}`)).equals(digest)
      } else {
        matches = hashOf(hash, JSON.stringify(target)).equals(digest) || (typeof target === 'string' && hashOf(hash, target).equals(digest))
      }
      if (!matches) throw new CheckFailed('RCD_INTEGRITY', `the content at ${pointer} does not match its rcdi digest`)
      checked++
    }
  }
  // Integrity means what is fetched by reference is what was signed: every such item has a digest.
  const covered = (pointer: string) => rcdi !== undefined && Object.hasOwn(rcdi as object, pointer)
  const integrity = checked > 0 && (jcl === undefined || covered('/jcl')) && (icn === undefined || covered('/icn'))
  const verified: VerifiedRcd = {
    nam, integrity,
    ...(typeof crn === 'string' ? { crn } : {}),
    ...(apn === undefined ? {} : { apn }),
    ...(icn === undefined ? {} : { icn }),
    ...(jcard === undefined ? {} : { jcard }),
    ...(jcl === undefined ? {} : { jcl }),
  }
  ctx.rcd = verified
  return `nam ${JSON.stringify(nam)}${jcard === undefined ? '' : ', a jCard'}${checked > 0 ? `; ${checked} rcdi digest(s) match` : '; no rcdi'}` +
    (checked > 0 && !integrity ? ' (content by reference without a digest: integrity false)' : '')
}
