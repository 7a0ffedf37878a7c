/**
 * The embedded ledger's approve text (LEDGER=local, method `event`): must equal
 * src/ledger/approve.ts ledgerApproveMessage, which test/web/page-logic.test.ts checks.
 */
export function ledgerApproveMessage(objectId: string, ref: string): string {
  return ['KNS embedded ledger: kns::approve', `Object: ${objectId.toLowerCase()}`, `Ref: ${ref}`].join('\n')
}
