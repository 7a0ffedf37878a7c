import { statSync } from 'node:fs'
import { CAMARA_GRANT_TYPES, MAX_JWKS_BYTES, type CamaraGrantType } from '../accounts/camara-clients.ts'
import type { OidcClient } from '../accounts/clients.ts'
import type { SigningKeyInfo } from '../accounts/signing-keys.ts'
import { ValidationError } from '../errors.ts'
import type { Service } from '../service.ts'
import { optional, required, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'
import { readTextFile } from './values.ts'

export const OIDC_OPTIONS = {
  'redirect-uri': { type: 'string', multiple: true }, issuer: { type: 'string' }, 'client-id': { type: 'string' }, confidential: { type: 'boolean' }, force: { type: 'boolean' },
  'grant-type': { type: 'string' }, jwks: { type: 'string' }, scope: { type: 'string' },
} as const

export const OIDC_USAGE = `  oidc client add --name <n> --redirect-uri <exact URI> [--redirect-uri ...] [--client-id <id>] [--confidential]
                                          a relying party of the login provider; --confidential prints its secret once
  oidc client add --name <n> --grant-type client_credentials --jwks <file> --scope "<scopes>" [--client-id <id>]
  oidc client add --name <n> --grant-type authorization_code --redirect-uri <exact URI> --jwks <file> --scope "<scopes>" [--client-id <id>]
                                          a CAMARA client (two- or three-legged): authenticates with private_key_jwt, signed by
                                          a key of its JWKS file (public RSA or P-256 keys only); scopes: CAMARA ones (sim-swap,
                                          sim-swap:check, device-swap, ...), dpv:FraudPreventionAndDetection, and openid (three-legged)
  oidc client list
  oidc client remove <clientId>
  oidc keys list                          the provider's signing keys: signing, next (published, not signing yet), retired
  oidc keys rotate [--force]              the next key signs, the signing key stays published 7 days, a new next key is published
  oidc repin-issuer [--issuer <URL>]      move the pinned zkLogin issuer (default: ZKLOGIN_ISSUER, or $PUBLIC_BASE_URL/oidc)
                                          while no address has been handed out; refused after that`

/** --grant-type, --jwks and --scope: a CAMARA client (undefined without --grant-type; --jwks and --scope then are usage errors). */
function camaraOptions(values: Parsed['values']): { grantType: CamaraGrantType; jwks: unknown; scope: string } | undefined {
  const grantType = optional(values, 'grant-type')
  if (grantType === undefined) {
    if (values.jwks !== undefined || values.scope !== undefined) throw new UsageError('--jwks and --scope are for a CAMARA client: add --grant-type client_credentials or authorization_code')
    return undefined
  }
  if (!(CAMARA_GRANT_TYPES as readonly string[]).includes(grantType)) throw new UsageError(`--grant-type must be ${CAMARA_GRANT_TYPES.join(' or ')}`)
  if (values.confidential === true) throw new UsageError('a CAMARA client authenticates with its keys (--jwks), not a secret: drop --confidential')
  return { grantType: grantType as CamaraGrantType, jwks: readJwksFile(required(values, 'jwks')), scope: required(values, 'scope') }
}

function readJwksFile(path: string): unknown {
  let size = 0
  try {
    size = statSync(path).size
  } catch {
    throw new ValidationError(`cannot read ${path}`, { field: 'jwks' })
  }
  if (size > MAX_JWKS_BYTES) throw new ValidationError(`${path}: a JWKS file is at most ${MAX_JWKS_BYTES} bytes`, { field: 'jwks' })
  try {
    return JSON.parse(readTextFile(path))
  } catch (err) {
    if (err instanceof ValidationError) throw err
    throw new ValidationError(`${path} is not JSON (a JSON Web Key Set: { "keys": [ ... ] })`, { field: 'jwks' })
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function presentClient(c: OidcClient) {
  return {
    clientId: c.clientId, name: c.name, redirectUris: c.redirectUris, confidential: c.confidential, builtIn: c.builtIn, createdAt: iso(c.createdAt),
    grantTypes: c.grantTypes, scope: c.scope, keyIds: c.keyIds,
  }
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
    const clientId = optional(values, 'client-id')
    const camara = camaraOptions(values)
    if (uris.length === 0 && camara?.grantType !== 'client_credentials') throw new UsageError('--redirect-uri is required (repeat it for several)')
    const { client, secret } = await clients.add({
      name: required(values, 'name'), redirectUris: uris, confidential: values.confidential === true, ...(clientId === undefined ? {} : { clientId }), ...camara,
    })
    const what = camara === undefined ? `for ${client.redirectUris.join(', ')}` : `(CAMARA, ${client.grantTypes.join(' ')}, private_key_jwt) with scope "${client.scope}"`
    return out.result({ ...presentClient(client), clientSecret: secret },
      `added client ${client.clientId} (${client.name}) ${what}` +
      (secret === null ? '' : `\n\n  client secret: ${secret}\n\nShown only this once (stored encrypted).`))
  }
  if (sub === 'client' && action === 'list') {
    const found = (await clients.list()).map(presentClient)
    return out.result({ clients: found }, found.map((c) => `${c.clientId}${c.builtIn ? ' (built-in)' : ''}  ${c.confidential ? 'confidential' : c.keyIds.length > 0 ? 'private_key_jwt' : 'public'}  ` +
      `${c.grantTypes.join(',')}  ${c.name}  ${c.redirectUris.join(' ')}${c.scope === null ? '' : `  scope: ${c.scope}`}`).join('\n'))
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
