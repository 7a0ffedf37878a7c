import type Provider from 'oidc-provider'
import { describePurpose, describeScope } from '../camara/scope-descriptions.ts'

/**
 * The consent step of a CAMARA three-legged authorization (the login page asks it after the
 * number's code; camara-provider.ts makes the provider ask): what the client asks for, in words,
 * and the grant the user's yes makes. Nothing is granted but what the prompt names: the scopes
 * the authorization request asked for (checked there against the client's registration and
 * the purpose rules), for the CAMARA APIs' audience.
 */
export type InteractionDetails = Awaited<ReturnType<Provider['interactionDetails']>>

export interface ConsentAsked {
  scopes: Array<{ scope: string; description: string }>
  purpose: { scope: string; description: string }
}

const PURPOSE_PREFIX = 'dpv:'

function missingScopes(details: InteractionDetails): { oidc: string[]; resources: Record<string, string[]> } {
  const asked = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> }
  return { oidc: asked.missingOIDCScope ?? [], resources: asked.missingResourceScopes ?? {} }
}

/** What the consent screen shows; null when the prompt asks for no CAMARA scope (nothing a person could weigh). */
export function consentAsked(details: InteractionDetails): ConsentAsked | null {
  if (details.prompt.name !== 'consent') return null
  const requested = [...new Set(Object.values(missingScopes(details).resources).flat())]
  const purpose = requested.find((s) => s.startsWith(PURPOSE_PREFIX))
  const scopes = requested.filter((s) => !s.startsWith(PURPOSE_PREFIX))
  if (purpose === undefined || scopes.length === 0) return null
  return {
    scopes: scopes.map((scope) => ({ scope, description: describeScope(scope) })),
    purpose: { scope: purpose, description: describePurpose(purpose) },
  }
}

/** The user said yes: the grant of the interaction gets what the prompt named; returns its ID for the interaction result. */
export async function grantConsent(provider: Provider, details: InteractionDetails): Promise<string> {
  const accountId = details.session?.accountId
  const clientId = String(details.params.client_id)
  if (accountId === undefined) throw new Error('a consent without a logged-in user')
  const found = details.grantId === undefined ? undefined : await provider.Grant.find(details.grantId)
  const grant = found !== undefined && found.accountId === accountId && found.clientId === clientId ? found : new provider.Grant({ accountId, clientId })
  const { oidc, resources } = missingScopes(details)
  if (oidc.length > 0) grant.addOIDCScope(oidc.join(' '))
  for (const [indicator, scopes] of Object.entries(resources)) grant.addResourceScope(indicator, scopes.join(' '))
  return grant.save()
}
