import { findApproval, statusAt } from '../approvals/approval.ts'
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts'
import { linkNumber } from '../identity/numbers.ts'
import { canonicalPhone } from '../identity/phone.ts'
import type { Service } from '../service.ts'
import { optional, required, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'
import { addressValue, e164Value, embeddedLedger, keypairFromSecret, objectIdValue, secretKeyArg } from './values.ts'

const ON_SUI = "; on Sui use 'kns token link'"

/** kns token mint | transfer | link */
export async function tokenCommand(service: Service, sub: string | undefined, args: Parsed, out: Output): Promise<void> {
  const { values } = args
  if (sub === 'mint') {
    const ledger = embeddedLedger(service, 'kns token mint', ON_SUI)
    const phone = canonicalPhone(e164Value(required(values, 'phone'), '--phone'))
    const owner = addressValue(optional(values, 'owner'), '--owner')
    const objectId = await service.db.transaction(async (tx) => {
      const token = await ledger.mintToken(owner, tx)
      await linkNumber(tx, phone, token.objectId, 'minted')
      return token.objectId
    })
    return out.result({ objectId, phoneNumber: phone, owner }, `minted ${objectId} to ${owner} for ${phone}`)
  }
  if (sub === 'transfer') {
    const ledger = embeddedLedger(service, 'kns token transfer', ON_SUI)
    const objectId = objectIdValue(optional(values, 'object-id'), '--object-id')
    const to = addressValue(optional(values, 'to'), '--to')
    const { digest } = await ledger.transferToken(objectId, to)
    return out.result({ objectId, owner: to, digest }, `transferred ${objectId} to ${to} (${digest})`)
  }
  if (sub === 'link') {
    const phone = canonicalPhone(e164Value(required(values, 'phone'), '--phone'))
    const objectId = objectIdValue(optional(values, 'object-id'), '--object-id')
    const token = await service.ledger.getToken(objectId)
    if (token === null) throw new NotFoundError(`no KNS token ${objectId} on the ledger`, { field: 'object-id' })
    await linkNumber(service.db, phone, objectId, 'linked')
    return out.result({ objectId, phoneNumber: phone, owner: token.owner }, `linked ${phone} to ${objectId} (owner ${token.owner ?? 'none'})`)
  }
  throw new UsageError(`unknown command 'kns token ${sub ?? ''}'`)
}

/** kns ledger approve: the owner's `kns::approve(token, ref)` on the embedded ledger. */
export async function ledgerCommand(service: Service, sub: string | undefined, args: Parsed, out: Output): Promise<void> {
  if (sub !== 'approve') throw new UsageError(`unknown command 'kns ledger ${sub ?? ''}'`)
  const ledger = embeddedLedger(service, 'kns ledger approve', ON_SUI)
  const { values } = args
  const objectId = objectIdValue(optional(values, 'object-id'), '--object-id')
  const ref = required(values, 'ref')
  const signer = keypairFromSecret(secretKeyArg(values)).toSuiAddress()
  // The Move call takes any ref; this command is for approvals, so it refuses what no
  // approval would accept rather than record a transaction and report success.
  const approval = await findApproval(service.db, ref)
  if (approval === null) throw new NotFoundError(`no approval ${ref} in this database`, { field: 'ref' })
  if (approval.method !== 'event') {
    throw new ValidationError(`approval ${ref} uses method "${approval.method}": the owner approves it with a wallet signature ` +
      `(kns wallet sign-approval, then verify_signature), not with kns::approve`, { field: 'ref' })
  }
  const status = statusAt(approval, Date.now())
  if (status !== 'pending') throw new ConflictError(`approval ${ref} is ${status}: there is nothing left to approve`, { field: 'ref' })
  if (approval.objectId !== objectId) {
    throw new ValidationError(`approval ${ref} is for token ${approval.objectId}, not ${objectId}`, { field: 'object-id' })
  }
  const { digest } = await ledger.approve(objectId, ref, signer)
  out.result({ digest, objectId, ref, sender: signer }, `approved ${ref} with ${objectId}: transaction ${digest}`)
}
