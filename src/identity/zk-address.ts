import { createHmac } from 'node:crypto'
import { computeZkLoginAddress } from '@mysten/sui/zklogin'

/**
 * zkLogin user salt: HMAC-SHA256(server secret, label | issuer | client | userId), first 16
 * bytes. 128 bits fits the BN254 field the salt lives in, is what Mysten's salt service
 * issues, and depends only on stable inputs, so a user's address never changes.
 */
export function deriveUserSalt(secret: Buffer, issuer: string, clientId: string, userId: string): bigint {
  const mac = createHmac('sha256', secret).update(`kns/zklogin-salt/v1\0${issuer}\0${clientId}\0${userId}`).digest()
  return BigInt(`0x${mac.subarray(0, 16).toString('hex')}`)
}

export function zkLoginAddressFor(secret: Buffer, issuer: string, clientId: string, userId: string): string {
  return computeZkLoginAddress({
    claimName: 'sub',
    claimValue: userId,
    iss: issuer,
    aud: clientId,
    userSalt: deriveUserSalt(secret, issuer, clientId, userId),
    legacyAddress: false,
  })
}
