import type { CallVerifier } from '../call-verifier.ts'
import { MAX_DIVERSIONS, orderDiversions } from '../diversion.ts'
import { parseIdentityHeader } from '../identity-header.ts'
import { CheckFailed } from '../../lib/checks.ts'
import { decodeCompactJws, destTns } from '../passport.ts'

/**
 * Whether a div PASSporT (RFC 8946) may be signed on top of a call, the one rule of every
 * interface that signs one (the SIP redirect server and POST /stir/v1/signing), in the order
 * of its checks:
 * - `unchanged`: the call goes on to a number it was already going to (the diverting number
 *   itself, or one its PASSporT already listed): RFC 8946 makes a div PASSporT only when the
 *   destination changes, and the call's own Identity stands;
 * - `unverified`: the call's Identity headers do not verify as a chain from the caller to the
 *   diverting number (a div on top of a forged, stale or unrelated PASSporT would vouch for it
 *   downstream), with the RFC 8224 response a proxy would send;
 * - `too-many` / `loop`: the chain with the new div is not one a verifier accepts (more than
 *   MAX_DIVERSIONS; the diverting number diverted the call before, or an earlier step already
 *   went on from it);
 * - `sign`.
 */
export type DivDecision =
  | { kind: 'sign' }
  | { kind: 'unchanged'; why: string }
  | { kind: 'unverified' | 'too-many' | 'loop'; why: string; sip: { code: number; text: string } }

export interface DivertedCall {
  /** E.164 digits without +: the caller (orig), the number diverted from, the new destination(s). */
  caller: string
  divertedFrom: string
  dest: readonly string[]
  /** The call's Identity header values (its shaken PASSporT and any div ones before). */
  identities: readonly string[]
}

const UNCHANGED = 'the destination did not change: no div PASSporT (RFC 8946)'

export async function decideDivSigning(verifier: CallVerifier, call: DivertedCall): Promise<DivDecision> {
  const { caller, divertedFrom, dest, identities } = call
  if (dest.includes(divertedFrom)) return { kind: 'unchanged', why: UNCHANGED }
  const verdict = await verifier.verify({ origTN: `+${caller}`, destTN: `+${divertedFrom}`, jwt: '', identity: [...identities] })
  if (!verdict.success) {
    return { kind: 'unverified', why: `the call's Identity does not verify, so no div PASSporT: ${verdict.reason ?? 'failed'}`, sip: verdict.sipReason ?? { code: 438, text: 'Invalid Identity Header' } }
  }
  return nextDiversion(identities, divertedFrom, dest)
}

/**
 * What one more diversion makes of the call's chain (its PASSporTs verified already), by the
 * verifier's own ordering (src/caller/diversion.ts), no cryptography: a stand-in for the new
 * div is put at the end of the chain.
 */
function nextDiversion(identities: readonly string[], divertedFrom: string, dest: readonly string[]): DivDecision {
  const decoded = identities.map((value) => decodeCompactJws(parseIdentityHeader(value).jws))
  const shaken = decoded.find((jws) => jws.header.ppt !== 'div')!
  const before = decoded.filter((jws) => jws !== shaken)
  const next = { header: { ppt: 'div' }, payload: { div: { tn: divertedFrom }, dest: { tn: [...dest] } }, signingInput: '', signature: Buffer.alloc(0) }
  try {
    const reached = orderDiversions(shaken, before, `+${divertedFrom}`).at(-1)?.to ?? destTns(shaken.payload)
    if (dest.some((tn) => reached?.includes(tn) === true)) return { kind: 'unchanged', why: UNCHANGED }
    orderDiversions(shaken, [...before, next], `+${dest[0]}`)
    return { kind: 'sign' }
  } catch (err) {
    if (!(err instanceof CheckFailed)) throw err
    if (err.code === 'DIV_TOO_MANY') {
      return { kind: 'too-many', why: `the call was diverted ${before.length} times already; verifiers check at most ${MAX_DIVERSIONS}`, sip: { code: 483, text: 'Too Many Hops' } }
    }
    return { kind: 'loop', why: `a div PASSporT from +${divertedFrom} would not verify: ${err.message}`, sip: { code: 482, text: 'Loop Detected' } }
  }
}
