import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1'
import { findApproval } from '../approvals/approval.ts'
import { signMessageFor } from '../approvals/sign-message.ts'
import { NotFoundError } from '../errors.ts'
import { ledgerApproveMessage } from '../ledger/approve.ts'
import type { Service } from '../service.ts'
import { optional, required, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'
import { keypairFromSecret, secretKeyArg } from './values.ts'

/**
 * Developer wallet: what a Sui wallet does on the approval page, from the command line, so
 * the whole approval flow can be tried without a browser wallet.
 */
export async function walletCommand(service: Service | null, sub: string | undefined, args: Parsed, out: Output): Promise<void> {
  const { values } = args
  if (sub === 'new') {
    const scheme = optional(values, 'scheme') ?? 'ed25519'
    const keypair = scheme === 'ed25519' ? new Ed25519Keypair()
      : scheme === 'secp256k1' ? new Secp256k1Keypair()
        : scheme === 'secp256r1' ? new Secp256r1Keypair() : null
    if (keypair === null) throw new UsageError('--scheme must be ed25519, secp256k1 or secp256r1')
    const address = keypair.toSuiAddress()
    const secretKey = keypair.getSecretKey()
    return out.result({ address, secretKey, scheme }, `address:    ${address}\nsecret key: ${secretKey}\n(keep the secret key to yourself)`)
  }
  if (sub === 'sign-approval') {
    const ref = required(values, 'ref')
    const approval = await findApproval(service!.db, ref)
    if (approval === null) throw new NotFoundError(`unknown approval number ${ref}`, { field: 'ref' })
    const keypair = keypairFromSecret(secretKeyArg(values))
    const text = signMessageFor(approval, service!.config.publicBaseUrl)
    const { signature } = await keypair.signPersonalMessage(new TextEncoder().encode(text))
    // The signed text names the service's public URL: say which, since a server with another
    // PUBLIC_BASE_URL would find the signature invalid (stderr: stdout is the signature alone).
    const serviceUrl = service!.config.publicBaseUrl
    if (!out.json) process.stderr.write(`kns: signed for the service at ${serviceUrl} (PUBLIC_BASE_URL)\n`)
    return out.result({ signature, address: keypair.toSuiAddress(), approvalNumber: ref, service: serviceUrl }, signature)
  }
  if (sub === 'sign-ledger-approve') {
    const objectId = required(values, 'object-id')
    const ref = required(values, 'ref')
    const keypair = keypairFromSecret(secretKeyArg(values))
    const { signature } = await keypair.signPersonalMessage(new TextEncoder().encode(ledgerApproveMessage(objectId, ref)))
    return out.result({ signature, address: keypair.toSuiAddress() }, signature)
  }
  throw new UsageError(`unknown command 'kns wallet ${sub ?? ''}'`)
}
