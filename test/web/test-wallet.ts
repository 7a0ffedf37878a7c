/**
 * A Sui wallet for the browser tests, registered in the page through the Wallet Standard like a
 * real extension. The page side (`registerTestWallet`, injected with page.addInitScript) is a
 * thin shell; every account and key operation runs here in Node through page.exposeFunction,
 * backed by an Ed25519 keypair that the test can swap at any time.
 */
import type { Page } from 'playwright-core'
import type { Keypair } from '@mysten/sui/cryptography'
import { fromBase64, toBase64 } from '@mysten/sui/utils'

export interface ExecuteResult { digest: string; bytes: string; signature: string; effects: string }

export interface TestWalletOptions {
  name?: string
  keypair: Keypair
  /** Features the wallet announces (default: connect, events, signPersonalMessage, signAndExecuteTransaction). */
  features?: string[]
}

export class TestWallet {
  readonly name: string
  readonly features: string[]
  keypair: Keypair
  /** Texts signed as personal messages, oldest first. */
  readonly signed: string[] = []
  /** Transactions (their JSON) the page asked to sign and execute. */
  readonly executed: string[] = []
  /** Set to make the next operations fail the way a wallet reports a refusal. */
  reject: 'connect' | 'sign' | null = null
  /** Sign these bytes instead of the ones asked for (a wallet bug / tampering). */
  tamper = false
  /** LEDGER=sui: runs the transaction (e.g. on the GraphQL stub) and returns its digest. */
  execute: ((json: string, sender: string, chain: string) => Promise<string>) | null = null

  constructor(options: TestWalletOptions) {
    this.name = options.name ?? 'KNS Test Wallet'
    this.keypair = options.keypair
    this.features = options.features ?? ['standard:connect', 'standard:events', 'sui:signPersonalMessage', 'sui:signAndExecuteTransaction']
  }

  get address(): string {
    return this.keypair.toSuiAddress()
  }

  /** Registers the wallet in every document the page loads from now on. */
  async install(page: Page): Promise<void> {
    const bridge = `__knsTestWallet_${this.name.replace(/\W/g, '_')}`
    await page.exposeFunction(bridge, (op: string, payload: Record<string, string>) => this.#handle(op, payload))
    await page.addInitScript(registerTestWallet, { name: this.name, bridge, features: this.features })
  }

  /** Registers the wallet in the document already loaded, as a wallet that injects itself late does. */
  async installNow(page: Page): Promise<void> {
    const bridge = `__knsTestWallet_${this.name.replace(/\W/g, '_')}`
    await page.exposeFunction(bridge, (op: string, payload: Record<string, string>) => this.#handle(op, payload))
    await page.evaluate(registerTestWallet, { name: this.name, bridge, features: this.features })
  }

  async #handle(op: string, payload: Record<string, string>): Promise<unknown> {
    if (op === 'connect') {
      if (this.reject === 'connect') throw new Error('Connection request rejected by the user')
      return { address: this.address, publicKey: toBase64(this.keypair.getPublicKey().toRawBytes()) }
    }
    if (payload.address !== this.address) throw new Error('unknown account')
    if (this.reject === 'sign') throw new Error('User rejected the request')
    if (op === 'signPersonalMessage') {
      const message = fromBase64(payload.message!)
      this.signed.push(new TextDecoder().decode(message))
      const signed = this.tamper ? new TextEncoder().encode('something else') : message
      return (await this.keypair.signPersonalMessage(signed)).signature
    }
    if (op === 'signAndExecuteTransaction') {
      this.executed.push(payload.json!)
      if (this.execute === null) throw new Error('this test wallet cannot execute transactions')
      const digest = await this.execute(payload.json!, this.address, payload.chain!)
      return { digest, bytes: '', signature: '', effects: '' } satisfies ExecuteResult
    }
    throw new Error(`unknown wallet operation ${op}`)
  }
}

/**
 * Runs in the page before its scripts (serialised by Playwright, so it must be self-contained).
 * Registers like @wallet-standard/wallet's registerWallet: dispatches `register-wallet`, and
 * answers the app's `app-ready`.
 */
export function registerTestWallet(options: { name: string; bridge: string; features: string[] }): void {
  const w = globalThis as any
  const call = (op: string, payload?: unknown): Promise<any> => w[options.bridge](op, payload ?? {})
  const b64 = (bytes: Uint8Array): string => btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(''))
  const fromB64 = (text: string): Uint8Array => Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
  const chains = ['sui:mainnet', 'sui:testnet']
  const listeners = new Set<(event: unknown) => void>()
  let accounts: any[] = []
  const all: Record<string, any> = {
    'standard:connect': {
      version: '1.0.0',
      connect: async () => {
        const info = await call('connect')
        accounts = [{
          address: info.address, publicKey: fromB64(info.publicKey), chains, label: 'Test account',
          features: ['sui:signPersonalMessage', 'sui:signAndExecuteTransaction'],
        }]
        for (const listener of listeners) listener({ accounts })
        return { accounts }
      },
    },
    'standard:events': {
      version: '1.0.0',
      on: (_event: string, listener: (event: unknown) => void) => {
        listeners.add(listener)
        return () => listeners.delete(listener)
      },
    },
    'sui:signPersonalMessage': {
      version: '1.1.0',
      signPersonalMessage: async (input: { message: Uint8Array; account: { address: string } }) => {
        const signature = await call('signPersonalMessage', { message: b64(input.message), address: input.account.address })
        return { bytes: b64(input.message), signature }
      },
    },
    'sui:signAndExecuteTransaction': {
      version: '2.0.0',
      signAndExecuteTransaction: async (input: { transaction: { toJSON(): Promise<string> }; account: { address: string }; chain: string }) =>
        call('signAndExecuteTransaction', { json: await input.transaction.toJSON(), address: input.account.address, chain: input.chain }),
    },
  }
  const features: Record<string, any> = {}
  for (const name of options.features) features[name] = all[name]
  const wallet = {
    version: '1.0.0',
    name: options.name,
    icon: 'data:image/svg+xml;base64,' + btoa('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><rect width="8" height="8" fill="#7c3aed"/></svg>'),
    chains,
    features,
    get accounts() { return accounts },
  }
  const register = (api: { register(wallet: unknown): unknown }) => api.register(wallet)
  w.addEventListener('wallet-standard:app-ready', (event: any) => register(event.detail))
  w.dispatchEvent(new CustomEvent('wallet-standard:register-wallet', { detail: register }))
}
