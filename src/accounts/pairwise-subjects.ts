import { createCipheriv, createDecipheriv, createHmac, timingSafeEqual } from 'node:crypto'

/**
 * The `sub` a CAMARA three-legged client sees, in its ID token and its access token: pairwise
 * (CAMARA's "ID Token sub claim": no global identifier, no MSISDN, a PPID recommended), so two
 * clients cannot correlate a user by it, and opaque to everyone but this service, which must
 * map it back to the user when the access token comes to the CAMARA APIs.
 *
 * Deterministic authenticated encryption of the user ID under a key derived from KNS_SECRET,
 * bound to the client (SIV style): the IV is an HMAC of (client, user), so the same user always
 * gets the same sub at one client (OIDC requires a stable sub) and a different one at another;
 * AES-256-GCM with the client ID as associated data, so a sub opens only with the client it was
 * made for. Nothing is stored. Format: `ps1.` + base64url(iv || tag || ciphertext).
 */
const PREFIX = 'ps1.'
const IV_BYTES = 12
const TAG_BYTES = 16
/** An OIDC sub is at most 255 ASCII characters; a user ID is a UUID (36). */
const MAX_USER_ID = 128

export class PairwiseSubjects {
  readonly #encryptionKey: () => Buffer
  readonly #ivKey: () => Buffer

  constructor(secret: () => Buffer) {
    const derive = (purpose: string) => () => createHmac('sha256', secret()).update(`kns/pairwise-sub/v1\0${purpose}`).digest()
    this.#encryptionKey = derive('encryption')
    this.#ivKey = derive('iv')
  }

  /** The user's sub at this client. */
  subjectFor(userId: string, clientId: string): string {
    if (userId.length === 0 || userId.length > MAX_USER_ID) throw new Error('a user ID is 1-128 characters')
    const iv = this.#iv(userId, clientId)
    const cipher = createCipheriv('aes-256-gcm', this.#encryptionKey(), iv).setAAD(Buffer.from(clientId, 'utf8'))
    const data = Buffer.concat([cipher.update(userId, 'utf8'), cipher.final()])
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64url')
  }

  /** The user ID behind a sub made for this client, or null (another client's, another secret's, or not one of ours). */
  userIdOf(sub: string, clientId: string): string | null {
    if (typeof sub !== 'string' || !sub.startsWith(PREFIX) || sub.length > 255) return null
    const raw = Buffer.from(sub.slice(PREFIX.length), 'base64url')
    if (raw.length <= IV_BYTES + TAG_BYTES) return null
    const iv = raw.subarray(0, IV_BYTES)
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#encryptionKey(), iv, { authTagLength: TAG_BYTES }).setAAD(Buffer.from(clientId, 'utf8'))
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
      const userId = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
      // The IV must be the one this (client, user) always gets: a sub is never a second spelling of another.
      return timingSafeEqual(iv, this.#iv(userId, clientId)) ? userId : null
    } catch {
      return null
    }
  }

  #iv(userId: string, clientId: string): Buffer {
    return createHmac('sha256', this.#ivKey()).update(`${clientId}\0${userId}`).digest().subarray(0, IV_BYTES)
  }
}
