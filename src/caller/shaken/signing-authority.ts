import { ForbiddenError, NotFoundError, ValidationError } from '../../errors.ts'
import { bindingCoversNumber, type Attestation, type SigningBinding } from '../../keys/api-keys.ts'
import type { SigningCredential } from './credentials.ts'
import { tnCovered } from './x509.ts'

/**
 * RFC 8224 6.1: before it signs, an authentication service decides whether it is
 * authoritative for the number. Here, in order:
 * 1. the API key is bound to credentials (a key bound to none signs nothing);
 * 2. it may claim this attestation level;
 * 3. it may sign for this number (its own number list, when it has one);
 * 4. the credential (the one named, which the key must be bound to; or else the one of the
 *    key's that covers the number, a TN-listing delegate certificate before an SPC one)
 *    covers the number by its certificate's TNAuthList: telephone numbers and ranges must
 *    include it; an SPC-only certificate is the carrier's and covers its numbers.
 * `signerTN` is the number the PASSporT vouches for: orig for shaken, the diverting number
 * for div (RFC 8946: the diverting provider signs for the number it diverts from).
 */
export interface SigningAsk {
  signerTN: string
  /** E.164 digits without +. */
  field: string
  attest?: Attestation
  named?: string
}

/** 2: the credential lists the number (a delegate certificate); 1: an SPC-only certificate; 0: it does not cover it (or has expired). */
function coverage(credential: SigningCredential, tn: string): 0 | 1 | 2 {
  // An expired certificate: every verifier would refuse what it signs.
  if (credential.notAfter < Date.now()) return 0
  const list = credential.tnAuthList
  if (list.tns.length + list.ranges.length === 0) return list.spcs.length > 0 ? 1 : 0
  return tnCovered(list, tn) ? 2 : 0
}

export function chooseCredential(credentials: ReadonlyMap<string, SigningCredential>, binding: SigningBinding | null, ask: SigningAsk): SigningCredential {
  if (binding === null || binding.credentials.length === 0) {
    throw new ForbiddenError('this API key is bound to no signing credential, so it signs nothing (kns api-key bind <id> --credentials <name>)', { field: 'signingRequest.credential' })
  }
  if (ask.attest !== undefined && !binding.attest.includes(ask.attest)) {
    throw new ForbiddenError(`this API key may claim attestation ${binding.attest.join(', ')} only`, { field: 'signingRequest.attest' })
  }
  if (!bindingCoversNumber(binding, ask.signerTN)) throw new ForbiddenError(`this API key may not sign for +${ask.signerTN}`, { field: ask.field })
  if (ask.named !== undefined) {
    if (!binding.credentials.includes(ask.named)) throw new ForbiddenError(`this API key may not use the credential ${ask.named}`, { field: 'signingRequest.credential' })
    const credential = credentials.get(ask.named)
    if (credential === undefined) throw new NotFoundError(`no signing credential ${ask.named}`, { field: 'signingRequest.credential' })
    if (credential.notAfter < Date.now()) throw new ForbiddenError(`the credential ${ask.named} has expired (${new Date(credential.notAfter).toISOString()})`, { field: 'signingRequest.credential' })
    if (coverage(credential, ask.signerTN) === 0) {
      throw new ForbiddenError(`the credential ${ask.named} is not authoritative for +${ask.signerTN}: its certificate's TNAuthList does not cover it`, { field: ask.field })
    }
    return credential
  }
  const usable = binding.credentials.map((name) => credentials.get(name)).filter((c): c is SigningCredential => c !== undefined)
  if (usable.length === 0) throw new NotFoundError('none of the credentials this API key is bound to exists (kns shaken credential list)', { field: 'signingRequest.credential' })
  const ranked = usable.map((c) => ({ c, rank: coverage(c, ask.signerTN) })).filter((r) => r.rank > 0)
  if (ranked.length === 0) {
    throw new ForbiddenError(`no credential this API key may use is authoritative for +${ask.signerTN} (their certificates' TNAuthLists do not cover it)`, { field: ask.field })
  }
  const best = Math.max(...ranked.map((r) => r.rank))
  const top = ranked.filter((r) => r.rank === best)
  if (top.length > 1) {
    throw new ValidationError(`${top.length} credentials cover +${ask.signerTN}: name one in signingRequest.credential (${top.map((r) => r.c.name).join(', ')})`, { field: 'signingRequest.credential' })
  }
  return top[0]!.c
}
