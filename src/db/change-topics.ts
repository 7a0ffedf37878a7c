/**
 * The change signals' vocabulary in one place (see change-signal.ts): topics, and the tags a
 * change names within a topic. A write that can change a cached answer signals its tags in
 * the same transaction; every cache that holds an entry derived from that tag drops it.
 *
 * - `caller`: what caller verification and approvals cache: a number's link to its token,
 *   a token's keystores, a keystore's keys.
 * - `ledger`: the embedded ledger's token owners.
 * - `accounts`: the login provider's signing keys (`oidc-keys`) and clients (`client:<id>`):
 *   every process rebuilds its provider's key set, or forgets a client.
 * - `approvals`: an approval was decided (approved or cancelled): `transaction_details?wait=`
 *   requests waiting for it are woken, in every process.
 */
export const CALLER_TOPIC = 'caller'
export const LEDGER_TOPIC = 'ledger'
export const APPROVAL_TOPIC = 'approvals'
export const ACCOUNTS_TOPIC = 'accounts'
export const TOPICS = [CALLER_TOPIC, LEDGER_TOPIC, APPROVAL_TOPIC, ACCOUNTS_TOPIC] as const

export const tag = {
  phone: (phone: string) => `phone:${phone}`,
  token: (objectId: string) => `token:${objectId.toLowerCase()}`,
  keystore: (keystoreId: string) => `keystore:${keystoreId}`,
  approval: (approvalNumber: string) => `approval:${approvalNumber}`,
}

/** The value a tag of that kind names, or undefined when the tag is of another kind. */
export function tagged(kind: keyof typeof tag, subject: string): string | undefined {
  const prefix = `${kind}:`
  return subject.startsWith(prefix) ? subject.slice(prefix.length) : undefined
}
