/**
 * The text the token owner signs for `POST /ledger/v1/approve` on the embedded ledger.
 * Dependency-free on purpose: the approval page bundles this same file, so the page and the
 * server can never disagree on what is signed.
 */
export function ledgerApproveMessage(objectId: string, ref: string): string {
  return ['KNS embedded ledger: kns::approve', `Object: ${objectId.toLowerCase()}`, `Ref: ${ref}`].join('\n')
}
