import { parseSerializedSignature, type PublicKey } from '@mysten/sui/cryptography'
import { MultiSigPublicKey } from '@mysten/sui/multisig'
import { publicKeyFromRawBytes } from '@mysten/sui/verify'
import { LedgerUnavailableError } from '../errors.ts'
import { verifyEd25519PersonalMessage } from '../lib/ed25519-fast.ts'
import { check, CheckFailed, runChecks, type Check } from '../lib/checks.ts'
import { checkApproverOwnsToken, checkDecidable, checkMethod, loadApproval, loaded, recordApproval, type DecideContext } from './decide-checks.ts'
import { signMessageFor } from './sign-message.ts'

export interface VerifySignatureContext extends DecideContext {
  signature: string
  serviceUrl: string
  parsed?: { scheme: string; serialized: string; publicKey: PublicKey; rawSignature: Uint8Array | null }
}

export interface Verdict { success: boolean; code?: string; error?: string }

const parseSignature = check<VerifySignatureContext>('parse_signature', (ctx) => {
  let parsed: ReturnType<typeof parseSerializedSignature>
  try {
    parsed = parseSerializedSignature(ctx.signature)
  } catch {
    throw new CheckFailed('INVALID_SIGNATURE', 'signature is not a Sui serialized signature (flag | signature | public key, base64)')
  }
  if (parsed.signatureScheme === 'ZkLogin' && ctx.ledger.coreClient === undefined) {
    throw new CheckFailed('UNSUPPORTED_SIGNATURE_SCHEME', 'zkLogin signatures can only be verified with LEDGER=sui')
  }
  const options = ctx.ledger.coreClient === undefined ? {} : { client: ctx.ledger.coreClient }
  try {
    const publicKey = parsed.signatureScheme === 'MultiSig'
      ? new MultiSigPublicKey(parsed.multisig.multisig_pk, options)
      : publicKeyFromRawBytes(parsed.signatureScheme, parsed.publicKey, options)
    ctx.parsed = {
      scheme: parsed.signatureScheme, serialized: ctx.signature, publicKey,
      rawSignature: parsed.signatureScheme === 'ED25519' ? parsed.signature : null,
    }
  } catch {
    throw new CheckFailed('INVALID_SIGNATURE', `signature carries an invalid ${parsed.signatureScheme} public key`)
  }
  return parsed.signatureScheme
})

const verifyPersonalMessage = check<VerifySignatureContext>('verify_signature', async (ctx) => {
  const approval = loaded(ctx)
  const { publicKey, serialized, scheme, rawSignature } = ctx.parsed!
  const message = new TextEncoder().encode(signMessageFor(approval, ctx.serviceUrl))
  let valid: boolean
  try {
    valid = rawSignature !== null
      ? verifyEd25519PersonalMessage(message, publicKey.toRawBytes(), rawSignature)
      : await publicKey.verifyPersonalMessage(message, serialized)
  } catch (err) {
    // Simple schemes fail closed with `false`; a throw is an environmental failure
    // (zkLogin JWK or epoch lookup), not the caller's fault.
    if (scheme === 'ZkLogin') throw new LedgerUnavailableError('could not fetch the zkLogin verification data from the ledger', { cause: err })
    valid = false
  }
  if (!valid) throw new CheckFailed('INVALID_SIGNATURE', 'signature does not verify over this approval\'s signMessage')
  ctx.approver = publicKey.toSuiAddress()
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
  const outcome = await runChecks(VERIFY_SIGNATURE, ctx)
  return outcome.ok ? { success: true } : { success: false, code: outcome.code, error: outcome.message }
}
