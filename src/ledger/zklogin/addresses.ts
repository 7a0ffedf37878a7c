import { ZkLoginPublicIdentifier } from '@mysten/sui/zklogin'

/**
 * The addresses one zkLogin signature stands for, from its public identifier (issuer and address
 * seed): the padded derivation first, then the legacy one when it differs (a seed with a leading
 * zero byte). Sui accepts a proof under either; which one owns a token is for the ledger to say.
 */
export function zkLoginAddresses(publicIdentifier: Uint8Array): string[] {
  const padded = ZkLoginPublicIdentifier.fromBytes(publicIdentifier, { legacyAddress: false }).toSuiAddress()
  const legacy = ZkLoginPublicIdentifier.fromBytes(publicIdentifier, { legacyAddress: true }).toSuiAddress()
  return legacy === padded ? [padded] : [padded, legacy]
}
