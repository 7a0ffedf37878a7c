import { decodeSuiPrivateKey, type Keypair } from '@mysten/sui/cryptography'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1'
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { NotFoundError, ValidationError } from '../errors.ts'
import { linkNumber } from '../identity/numbers.ts'
import { canonicalPhone, isE164 } from '../identity/phone.ts'
import { OBJECT_ID_PATTERN } from '../ledger/ledger.ts'
import { LocalLedger } from '../ledger/local-ledger.ts'
import type { Service } from '../service.ts'
import { required, type Parsed } from './args.ts'
import type { Output } from './output.ts'
import { UsageError } from './output.ts'
import { secretKeyArg } from './wallet-commands.ts'

function phoneArg(values: Parsed['values']): string {
  const phone = required(values, 'phone')
  if (!isE164(phone)) throw new ValidationError(`--phone must be an E.164 number, got "${phone}"`, { field: 'phone' })
  return canonicalPhone(phone)
}

function idArg(values: Parsed['values'], name: string): string {
  const id = required(values, name)
  if (!OBJECT_ID_PATTERN.test(id)) throw new ValidationError(`--${name} must be 0x followed by 64 hex digits`, { field: name })
  return id.toLowerCase()
}

function addressArg(values: Parsed['values'], name: string): string {
  const address = required(values, name)
  if (!isValidSuiAddress(address) || !address.startsWith('0x')) throw new ValidationError(`--${name} must be a Sui address (0x...)`, { field: name })
  return normalizeSuiAddress(address)
}

function localLedger(service: Service, command: string): LocalLedger {
  if (!(service.ledger instanceof LocalLedger)) {
    throw new UsageError(`'${command}' works on the embedded ledger only (LEDGER=local); on Sui use 'kns token link'`)
  }
  return service.ledger
}

export function keypairFromSecret(secret: string): Keypair {
  let decoded: ReturnType<typeof decodeSuiPrivateKey>
  try {
    decoded = decodeSuiPrivateKey(secret.trim())
  } catch {
    throw new ValidationError('the secret key must be a Bech32 suiprivkey1... string', { field: 'secret-key' })
  }
  switch (decoded.scheme) {
    case 'ED25519': return Ed25519Keypair.fromSecretKey(decoded.secretKey)
    case 'Secp256k1': return Secp256k1Keypair.fromSecretKey(decoded.secretKey)
    case 'Secp256r1': return Secp256r1Keypair.fromSecretKey(decoded.secretKey)
    default: throw new ValidationError(`unsupported key scheme ${decoded.scheme}`, { field: 'secret-key' })
  }
}

/** kns token mint | transfer | link */
export async function tokenCommand(service: Service, sub: string | undefined, args: Parsed, out: Output): Promise<void> {
  const { values } = args
  if (sub === 'mint') {
    const ledger = localLedger(service, 'kns token mint')
    const phone = phoneArg(values)
    const owner = addressArg(values, 'owner')
    const objectId = await service.db.transaction(async (tx) => {
      const token = await ledger.mintToken(owner, tx)
      await linkNumber(tx, phone, token.objectId, 'minted')
      return token.objectId
    })
    return out.result({ objectId, phoneNumber: phone, owner }, `minted ${objectId} to ${owner} for ${phone}`)
  }
  if (sub === 'transfer') {
    const ledger = localLedger(service, 'kns token transfer')
    const objectId = idArg(values, 'object-id')
    const to = addressArg(values, 'to')
    const { digest } = await ledger.transferToken(objectId, to)
    return out.result({ objectId, owner: to, digest }, `transferred ${objectId} to ${to} (${digest})`)
  }
  if (sub === 'link') {
    const phone = phoneArg(values)
    const objectId = idArg(values, 'object-id')
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
  const ledger = localLedger(service, 'kns ledger approve')
  const { values } = args
  const objectId = idArg(values, 'object-id')
  const ref = required(values, 'ref')
  const signer = keypairFromSecret(secretKeyArg(values)).toSuiAddress()
  const { digest } = await ledger.approve(objectId, ref, signer)
  out.result({ digest, objectId, ref, sender: signer }, `approved ${ref} with ${objectId}: transaction ${digest}`)
}
