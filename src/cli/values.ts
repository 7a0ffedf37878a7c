import { readFileSync } from 'node:fs'
import { decodeSuiPrivateKey, type Keypair } from '@mysten/sui/cryptography'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1'
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { ValidationError } from '../errors.ts'
import { isE164 } from '../identity/phone.ts'
import { OBJECT_ID_PATTERN } from '../ledger/ledger.ts'
import { LocalLedger } from '../ledger/local-ledger.ts'
import type { Service } from '../service.ts'
import { optional, type Parsed } from './args.ts'
import { UsageError } from './output.ts'

/** Checks of command-line values shared by the command modules; `what` names the flag in messages. */

export function readTextFile(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    throw new ValidationError(`cannot read ${path}`)
  }
}

/** An E.164 number as given (the caller canonicalises where it stores). */
export function e164Value(value: string, what: string): string {
  if (!isE164(value)) throw new ValidationError(`${what} must be an E.164 number, got "${value}"`, { field: what.replace(/^--/, '') })
  return value
}

/** An object ID, lowercased; a missing one is a usage error. */
export function objectIdValue(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`${what} is required`)
  if (!OBJECT_ID_PATTERN.test(value)) throw new ValidationError(`${what} must be 0x followed by 64 hex digits`, { field: what.replace(/^--/, '') })
  return value.toLowerCase()
}

export function addressValue(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`${what} is required`)
  if (!isValidSuiAddress(value) || !value.startsWith('0x')) throw new ValidationError(`${what} must be a Sui address (0x...)`, { field: what.replace(/^--/, '') })
  return normalizeSuiAddress(value)
}

/** The embedded ledger, or a usage error naming the command (and, optionally, what to use instead). */
export function embeddedLedger(service: Service, command: string, instead = ''): LocalLedger {
  if (!(service.ledger instanceof LocalLedger)) throw new UsageError(`'${command}' works on the embedded ledger only (LEDGER=local)${instead}`)
  return service.ledger
}

/** The key for a command: --secret-key, --secret-key-file or KNS_SECRET_KEY (kept out of `ps` output). */
export function secretKeyArg(values: Parsed['values']): string {
  const file = optional(values, 'secret-key-file')
  const secret = file !== undefined ? readTextFile(file) : optional(values, 'secret-key') ?? process.env.KNS_SECRET_KEY
  if (secret === undefined) throw new UsageError('--secret-key, --secret-key-file or KNS_SECRET_KEY is required')
  return secret
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
