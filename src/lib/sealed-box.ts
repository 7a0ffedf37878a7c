import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'

/**
 * Secrets the service must use again (webhook signing secrets), stored encrypted: AES-256-GCM
 * under a key derived from the server secret for one purpose, so a copy of the database
 * alone reveals none of them. Format: `v1.<iv>.<tag>.<ciphertext>`, each base64url.
 */
export class SealedBox {
  readonly #key: Buffer

  constructor(serverSecret: Buffer, purpose: string) {
    this.#key = createHmac('sha256', serverSecret).update(`kns/sealed-box/v1\0${purpose}`).digest()
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv)
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return ['v1', iv, cipher.getAuthTag(), data].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.')
  }

  /** Throws when the text was not sealed by this box (another server secret, or altered). */
  open(sealed: string): string {
    const [version, iv, tag, data] = sealed.split('.')
    if (version !== 'v1' || iv === undefined || tag === undefined || data === undefined) throw new Error('not a sealed value')
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'), { authTagLength: 16 })
    decipher.setAuthTag(Buffer.from(tag, 'base64url'))
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8')
  }
}
