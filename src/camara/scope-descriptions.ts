import { FRAUD_PREVENTION_PURPOSE } from './access.ts'

/**
 * The CAMARA scopes and the purpose in words, for the person asked to consent (the login page's
 * consent step): what the client will be able to learn about their number, and why.
 */
const SCOPE_WORDS: Record<string, string> = {
  'sim-swap': 'Check whether, and see when, the SIM card of your number was last changed',
  'sim-swap:check': 'Check whether the SIM card of your number was changed recently',
  'sim-swap:retrieve-date': 'See when the SIM card of your number was last changed',
  'device-swap': 'Check whether, and see when, your number was last used in a new phone',
  'device-swap:check': 'Check whether your number was used in a new phone recently',
  'device-swap:retrieve-date': 'See when your number was last used in a new phone',
  'sim-swap-subscriptions:org.camaraproject.sim-swap-subscriptions.v0.swapped:create': 'Be told when the SIM card of your number changes',
  'sim-swap-subscriptions:read': 'See the notifications it asked for about your number',
  'sim-swap-subscriptions:delete': 'Stop the notifications it asked for about your number',
}

const PURPOSE_WORDS: Record<string, string> = {
  [FRAUD_PREVENTION_PURPOSE]: 'Preventing and detecting fraud (for example someone taking over your number to get into your accounts)',
}

/** A scope in words (the scope itself when it has none: never an empty line on the screen). */
export function describeScope(scope: string): string {
  return SCOPE_WORDS[scope] ?? scope
}

export function describePurpose(purpose: string): string {
  return PURPOSE_WORDS[purpose] ?? purpose
}
