import { parseSerializedSignature } from '@mysten/sui/cryptography'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import { ForbiddenError, ValidationError } from '../errors.ts'
import { ledgerApproveMessage } from '../contract/approve-text.ts'
import type { LocalLedger } from './local-ledger.ts'
import { zkLoginAddresses } from './zklogin/addresses.ts'

export { ledgerApproveMessage }

/**
 * Stands in for the wallet executing `kns::approve(token, ref)`: the signature proves the
 * caller holds the owner's key, as a transaction signature would on Sui. A zkLogin signature
 * (an owner who logged in with the phone number) is verified by the embedded ledger's own
 * zkLogin checks, under whichever of its two address derivations owns the token.
 */
export async function approveWithSignature(ledger: LocalLedger, input: { objectId: string; ref: string; signature: string }): Promise<{ digest: string }> {
  let parsed: ReturnType<typeof parseSerializedSignature>
  try {
    parsed = parseSerializedSignature(input.signature)
  } catch {
    throw new ValidationError('signature is not a Sui serialized signature', { field: 'signature' })
  }
  const message = new TextEncoder().encode(ledgerApproveMessage(input.objectId, input.ref))
  const refused = (why: string) => new ForbiddenError(`signature does not verify over the kns::approve text for this object and ref${why}`)
  let signer: string
  if (parsed.signatureScheme === 'ZkLogin') {
    if (ledger.verifyPersonalMessage === undefined) throw new ValidationError('this embedded ledger verifies no zkLogin signatures', { field: 'signature' })
    const candidates = zkLoginAddresses(parsed.publicKey)
    const owner = (await ledger.getToken(input.objectId, { fresh: true }))?.owner
    signer = owner != null && candidates.includes(owner) ? owner : candidates[0]!
    const verdict = await ledger.verifyPersonalMessage(message, input.signature, signer)
    if (!verdict.valid) throw refused(` (${verdict.reason})`)
  } else {
    try {
      signer = (await verifyPersonalMessageSignature(message, input.signature)).toSuiAddress()
    } catch {
      throw refused('')
    }
  }
  return ledger.approve(input.objectId, input.ref, signer)
}
