/**
 * LEDGER=sui, method `event`: the owner's wallet executes `<KNS package>::kns::approve(token, ref)`
 * on Sui. Loaded with import() only for that case, so the other approvals never download the
 * transaction builder.
 */
import { Transaction } from '@mysten/sui/transactions'
import { signAndExecuteTransaction, type Wallet, type WalletAccount } from '@mysten/wallet-standard'

/** The Move call of an approval, as the wallet will sign it. */
export function approveTransaction(packageId: string, objectId: string, ref: string, sender: string): Transaction {
  const tx = new Transaction()
  tx.setSender(sender)
  tx.moveCall({ target: `${packageId}::kns::approve`, arguments: [tx.object(objectId), tx.pure.string(ref)] })
  return tx
}

/** Signs and executes the approval; returns the transaction digest for verify_transaction. */
export async function executeApprove(
  wallet: Wallet, account: WalletAccount,
  input: { packageId: string; objectId: string; ref: string; network: 'mainnet' | 'testnet' },
): Promise<string> {
  const transaction = approveTransaction(input.packageId, input.objectId, input.ref, account.address)
  const result = await signAndExecuteTransaction(wallet as Parameters<typeof signAndExecuteTransaction>[0], {
    transaction, account, chain: `sui:${input.network}`,
  })
  return result.digest
}
