import { parseSerializedSignature } from '@mysten/sui/cryptography'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import { ForbiddenError, ValidationError } from '../errors.ts'
import { ledgerApproveMessage } from '../contract/approve-text.ts'
import type { LocalLedger } from './local-ledger.ts'

export { ledgerApproveMessage }

/**
 * Stands in for the wallet executing `kns::approve(token, ref)`: the signature proves the
 * caller holds the owner's key, as a transaction signature would on Sui.
 */
export async function approveWithSignature(ledger: LocalLedger, input: { objectId: string; ref: string; signature: string }): Promise<{ digest: string }> {
  let scheme: string
  try {
    scheme = parseSerializedSignature(input.signature).signatureScheme
  } catch {
    throw new ValidationError('signature is not a Sui serialized signature', { field: 'signature' })
  }
  if (scheme === 'ZkLogin') throw new ValidationError('the embedded ledger cannot verify zkLogin signatures', { field: 'signature' })
  let signer: string
  try {
    const message = new TextEncoder().encode(ledgerApproveMessage(input.objectId, input.ref))
    signer = (await verifyPersonalMessageSignature(message, input.signature)).toSuiAddress()
  } catch {
    throw new ForbiddenError('signature does not verify over the kns::approve text for this object and ref')
  }
  return ledger.approve(input.objectId, input.ref, signer)
}
