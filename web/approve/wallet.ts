/**
 * Wallet Standard access for the approval page: find Sui wallets registered in the page (by
 * extensions or in-app browsers), connect, and sign. Only `getWallets` is imported here; the
 * transaction builder lives in sui-transaction.ts, loaded on demand for LEDGER=sui.
 */
import {
  getWallets,
  type StandardConnectFeature,
  type SuiSignPersonalMessageFeature,
  type Wallet,
  type WalletAccount,
} from '@mysten/wallet-standard'

export type { Wallet, WalletAccount }

/** Features an approval needs from the wallet, by how it is made. */
export function requiredFeatures(kind: 'personal-message' | 'transaction'): string[] {
  return kind === 'personal-message'
    ? ['standard:connect', 'sui:signPersonalMessage']
    : ['standard:connect', 'sui:signAndExecuteTransaction']
}

/** Registered wallets that have every feature in `features` (or the older transaction-block one). */
export function compatibleWallets(features: string[]): Wallet[] {
  const has = (w: Wallet, f: string) =>
    f in w.features || (f === 'sui:signAndExecuteTransaction' && 'sui:signAndExecuteTransactionBlock' in w.features)
  return getWallets().get().filter((w) => features.every((f) => has(w, f)))
}

/** Calls `listener` whenever a wallet registers (a wallet app's browser may inject its wallet after the page has loaded). */
export function onWalletRegistered(listener: () => void): void {
  getWallets().on('register', listener)
}

/** Every registered wallet that announces a Sui chain, whatever its features. */
export function suiWallets(): Wallet[] {
  return getWallets().get().filter((w) => w.chains.some((chain) => chain.startsWith('sui:')))
}

/** `0x` + 64 lowercase hex digits, the form transaction_details uses. */
export function normalizeAddress(address: string): string {
  const hex = address.trim().toLowerCase().replace(/^0x/, '')
  return `0x${hex.padStart(64, '0')}`
}

/** `0x1234ab…cdef01`: enough to compare with the wallet's own display. */
export function shortAddress(address: string): string {
  const a = normalizeAddress(address)
  return `${a.slice(0, 8)}…${a.slice(-6)}`
}

export async function connectWallet(wallet: Wallet): Promise<readonly WalletAccount[]> {
  const connect = (wallet.features as Partial<StandardConnectFeature>)['standard:connect']
  if (connect === undefined) throw new Error(`${wallet.name} cannot connect to web pages`)
  const { accounts } = await connect.connect()
  return accounts.length > 0 ? accounts : wallet.accounts
}

/** The base64 Sui serialized signature of `text` as a personal message. */
export async function signPersonalMessage(wallet: Wallet, account: WalletAccount, text: string): Promise<string> {
  const feature = (wallet.features as Partial<SuiSignPersonalMessageFeature>)['sui:signPersonalMessage']
  if (feature === undefined) throw new Error(`${wallet.name} cannot sign messages`)
  const { signature } = await feature.signPersonalMessage({ message: new TextEncoder().encode(text), account })
  return signature
}
