/** Public-key formats of the keystores (domain.md): SPKI PEMs of P-256 keys, their key IDs. */
import { createHash, createPublicKey, type KeyObject } from 'node:crypto'
import { ValidationError } from '../errors.ts'

const PEM_BLOCK = /-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----/

/** The base64 body of an SPKI PEM (header, footer and all white space removed), or of a bare body. */
export function pemBody(pemOrBody: string): string {
  const match = PEM_BLOCK.exec(pemOrBody)
  return (match === null ? pemOrBody : match[1]!).replace(/\s+/g, '')
}

/** The usual key ID (domain.md): first 32 hex characters of SHA-256 over the PEM's base64 body. */
export function defaultKeyId(pemOrBody: string): string {
  return createHash('sha256').update(pemBody(pemOrBody)).digest('hex').slice(0, 32)
}

/**
 * A keystore's public key (a full SPKI PEM or just its base64 body) as a canonical PEM; null
 * when it is labelled as something else or is not base64. The key itself is not parsed here
 * (see parseP256PublicKey).
 */
export function toSpkiPem(raw: string): string | null {
  const trimmed = raw.trim()
  const labelled = /^-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----$/.exec(trimmed)
  if (labelled !== null && labelled[1] !== 'PUBLIC KEY') return null
  const body = (labelled === null ? trimmed : labelled[2]!).replace(/\s+/g, '')
  if (body === '' || !/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) return null
  return toPem(body)
}

export function toPem(body: string): string {
  const lines = body.match(/.{1,64}/g) ?? []
  return `-----BEGIN PUBLIC KEY-----\n${lines.join('\n')}\n-----END PUBLIC KEY-----\n`
}

/**
 * Parses an SPKI PEM (or its base64 body) that must be a P-256 public key: the only key
 * ES256 accepts. Returns the canonical PEM and the prepared KeyObject.
 */
export function parseP256PublicKey(pemOrBody: string): { pem: string; key: KeyObject } {
  const body = pemBody(pemOrBody)
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length > 1024) {
    throw new ValidationError('public key must be an SPKI PEM ("BEGIN PUBLIC KEY") or its base64 body', { field: 'publicKey' })
  }
  const pem = toPem(body)
  let key: KeyObject
  try {
    key = createPublicKey({ key: pem, format: 'pem' })
  } catch {
    throw new ValidationError('public key is not a valid SPKI public key', { field: 'publicKey' })
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new ValidationError('public key must be an EC P-256 (prime256v1) key for ES256', { field: 'publicKey' })
  }
  return { pem, key }
}

export const KEY_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/
