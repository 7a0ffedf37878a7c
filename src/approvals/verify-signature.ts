import { parseSerializedSignature, type PublicKey } from '@mysten/sui/cryptography'
import { MultiSigPublicKey } from '@mysten/sui/multisig'
import { publicKeyFromRawBytes } from '@mysten/sui/verify'
import { zkLoginAddresses } from '../ledger/zklogin/addresses.ts'
import { verifyEd25519PersonalMessage } from '../lib/ed25519-fast.ts'
import { check, CheckFailed, runChecks, type Check } from '../lib/checks.ts'
import { checkApproverOwnsToken, checkDecidable, checkMethod, loadApproval, loaded, recordApproval, type DecideContext } from './decide-checks.ts'
import { signMessageFor } from './sign-message.ts'
import { verdictOf, type Verdict } from './verdict.ts'

export interface VerifySignatureContext extends DecideContext {
  signature: string
  serviceUrl: string
  parsed?: ParsedSignature
}

interface ParsedSignature {
  scheme: string
  serialized: string
  publicKey: PublicKey
  /** Ed25519's raw signature, for the fast local check. */
  rawSignature: Uint8Array | null
  /** zkLogin (alone or inside a multisig) needs the chain's JWKs and epoch: the ledger verifies it. */
  viaLedger: boolean
  /** The addresses the signature can stand for: zkLogin has two derivations (padded and legacy) of one proof. */
  addresses: string[]
}


function involvesZkLogin(parsed: ReturnType<typeof parseSerializedSignature>): boolean {
  if (parsed.signatureScheme === 'ZkLogin') return true
  if (parsed.signatureScheme !== 'MultiSig') return false
  return parsed.multisig.sigs.some((sig) => 'ZkLogin' in sig)
}

const parseSignature = check<VerifySignatureContext>('parse_signature', (ctx) => {
  let parsed: ReturnType<typeof parseSerializedSignature>
  try {
    parsed = parseSerializedSignature(ctx.signature)
  } catch {
    throw new CheckFailed('INVALID_SIGNATURE', 'signature is not a Sui serialized signature (flag | signature | public key, base64)')
  }
  const viaLedger = involvesZkLogin(parsed)
  if (viaLedger && ctx.ledger.verifyPersonalMessage === undefined) {
    throw new CheckFailed('UNSUPPORTED_SIGNATURE_SCHEME', 'this ledger verifies no zkLogin signatures')
  }
  try {
    const publicKey = parsed.signatureScheme === 'MultiSig'
      ? new MultiSigPublicKey(parsed.multisig.multisig_pk)
      : publicKeyFromRawBytes(parsed.signatureScheme, parsed.publicKey)
    const addresses = parsed.signatureScheme === 'ZkLogin' ? zkLoginAddresses(parsed.publicKey) : [publicKey.toSuiAddress()]
    ctx.parsed = {
      scheme: parsed.signatureScheme, serialized: ctx.signature, publicKey, viaLedger, addresses,
      rawSignature: parsed.signatureScheme === 'ED25519' ? parsed.signature : null,
    }
  } catch {
    throw new CheckFailed('INVALID_SIGNATURE', `signature carries an invalid ${parsed.signatureScheme} public key`)
  }
  return parsed.signatureScheme
})

/**
 * Of the addresses a zkLogin proof stands for, the one that owns the token (or approved
 * already); the padded derivation when neither does. The ledger accepts either derivation of
 * one proof, so the choice only names the author; the owner check (a fresh read, re-read
 * while the indexer lags) accepts the token under any of them (`approverAliases`).
 */
async function authorOf(ctx: VerifySignatureContext, parsed: ParsedSignature): Promise<string> {
  if (parsed.addresses.length === 1) return parsed.addresses[0]!
  const approval = loaded(ctx)
  if (approval.wallet !== null && parsed.addresses.includes(approval.wallet)) return approval.wallet
  const owner = (await ctx.ledger.getToken(approval.objectId))?.owner
  return owner != null && parsed.addresses.includes(owner) ? owner : parsed.addresses[0]!
}

const verifyPersonalMessage = check<VerifySignatureContext>('verify_signature', async (ctx) => {
  const approval = loaded(ctx)
  const parsed = ctx.parsed!
  const { publicKey, serialized, rawSignature } = parsed
  const message = new TextEncoder().encode(signMessageFor(approval, ctx.serviceUrl))
  let valid: boolean
  let author: string
  let reason: string | undefined
  if (parsed.viaLedger) {
    // The ledger's verdict, or LedgerUnavailableError (503): an outage is never INVALID_SIGNATURE.
    author = await authorOf(ctx, parsed)
    const verdict = await ctx.ledger.verifyPersonalMessage!(message, serialized, author)
    valid = verdict.valid
    if (!verdict.valid) reason = verdict.reason
  } else {
    author = publicKey.toSuiAddress()
    try {
      valid = rawSignature !== null
        ? verifyEd25519PersonalMessage(message, publicKey.toRawBytes(), rawSignature)
        : await publicKey.verifyPersonalMessage(message, serialized)
    } catch {
      valid = false
    }
  }
  if (!valid) throw new CheckFailed('INVALID_SIGNATURE', `signature does not verify over this approval's signMessage${reason === undefined ? '' : ` (${reason})`}`)
  ctx.approver = author
  ctx.approverAliases = parsed.addresses
  ctx.proof = serialized
  return ctx.approver
})

/** verify_signature: a `sign` approval, proven by the owner's personal-message signature. */
export const VERIFY_SIGNATURE: readonly Check<VerifySignatureContext>[] = [
  loadApproval,
  checkMethod('sign'),
  checkDecidable,
  parseSignature,
  verifyPersonalMessage,
  checkApproverOwnsToken,
  recordApproval,
]

export async function verifySignature(ctx: VerifySignatureContext): Promise<Verdict> {
  return verdictOf(await runChecks(VERIFY_SIGNATURE, ctx))
}
