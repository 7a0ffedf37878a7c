import type { OidcClient } from '../accounts/clients.ts'
import type { SigningKeyInfo } from '../accounts/signing-keys.ts'
import type { Service } from '../service.ts'
import { optional, required, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'

export const OIDC_OPTIONS = {
  'redirect-uri': { type: 'string', multiple: true }, issuer: { type: 'string' }, 'client-id': { type: 'string' }, confidential: { type: 'boolean' }, force: { type: 'boolean' },
} as const

export const OIDC_USAGE = `  oidc client add --name <n> --redirect-uri <exact URI> [--redirect-uri ...] [--client-id <id>] [--confidential]
                                          a relying party of the login provider; --confidential prints its secret once
  oidc client list
  oidc client remove <clientId>
  oidc keys list                          the provider's signing keys: signing, next (published, not signing yet), retired
  oidc keys rotate [--force]              the next key signs, the signing key stays published 7 days, a new next key is published
  oidc repin-issuer [--issuer <URL>]      move the pinned zkLogin issuer (default: ZKLOGIN_ISSUER, or $PUBLIC_BASE_URL/oidc)
                                          while no address has been handed out; refused after that`

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function presentClient(c: OidcClient) {
  return { clientId: c.clientId, name: c.name, redirectUris: c.redirectUris, confidential: c.confidential, builtIn: c.builtIn, createdAt: iso(c.createdAt) }
}

function presentKey(k: SigningKeyInfo) {
  return { kid: k.kid, state: k.state, createdAt: iso(k.createdAt), signingFrom: iso(k.signingFrom), retiredAt: iso(k.retiredAt), publishedUntil: iso(k.publishedUntil) }
}

/** kns oidc client add | list | remove; kns oidc keys list | rotate */
export async function oidcCommand(service: Service, sub: string | undefined, { values, positionals }: Parsed, out: Output): Promise<void> {
  const { clients, keys } = service.accounts
  const action = positionals[2]
  if (sub === 'client' && action === 'add') {
    const uris = (values['redirect-uri'] as unknown as string[] | undefined) ?? []
    if (uris.length === 0) throw new UsageError('--redirect-uri is required (repeat it for several)')
    const clientId = optional(values, 'client-id')
    const { client, secret } = await clients.add({ name: required(values, 'name'), redirectUris: uris, confidential: values.confidential === true, ...(clientId === undefined ? {} : { clientId }) })
    return out.result({ ...presentClient(client), clientSecret: secret },
      `added client ${client.clientId} (${client.name}) for ${client.redirectUris.join(', ')}` +
      (secret === null ? '' : `\n\n  client secret: ${secret}\n\nShown only this once (stored encrypted).`))
  }
  if (sub === 'client' && action === 'list') {
    const found = (await clients.list()).map(presentClient)
    return out.result({ clients: found }, found.map((c) => `${c.clientId}${c.builtIn ? ' (built-in)' : ''}  ${c.confidential ? 'confidential' : 'public'}  ${c.name}  ${c.redirectUris.join(' ')}`).join('\n'))
  }
  if (sub === 'client' && action === 'remove') {
    const clientId = positionals[3]
    if (clientId === undefined) throw new UsageError('usage: kns oidc client remove <clientId>')
    await clients.remove(clientId)
    return out.result({ clientId, removed: true }, `removed client ${clientId}`)
  }
  if (sub === 'keys' && action === 'list') {
    const found = (await keys.list()).map(presentKey)
    return out.result({ keys: found }, found.map((k) => `${k.kid}  ${k.state.padEnd(7)}  created ${k.createdAt}${k.publishedUntil === null ? '' : `  published until ${k.publishedUntil}`}`).join('\n'))
  }
  if (sub === 'keys' && action === 'rotate') {
    const rotated = await keys.rotate({ force: values.force === true })
    return out.result(rotated, `key ${rotated.signing} signs now; ${rotated.retired ?? 'no key'} retired (published 7 more days); next key ${rotated.next} published. ` +
      'Running servers pick the new keys up within a second.')
  }
  throw new UsageError(`unknown command 'kns oidc ${[sub, action].filter(Boolean).join(' ')}'`)
}
