import { listCredentials } from '../caller/shaken/credentials.ts'
import { ValidationError } from '../errors.ts'
import {
  bindSigningKey, createApiKey, listApiKeys, parseScopes, parseSigningBinding, revokeApiKey, type ApiKey, type SigningBinding,
} from '../keys/api-keys.ts'
import { deleteApiKey } from '../keys/delete-api-key.ts'
import type { Service } from '../service.ts'
import { optional, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'

export const API_KEY_USAGE = `  api-key create --vendor <brand> [--scopes approvals,caller,signing,stats,webhooks,oidc,sim-changes] [--rate <req/s>]
                 [--credentials <name,...> [--attest A,B,C] [--numbers <+E164|+prefix*,...>]]
                                          a signing key signs only with the credentials it is bound to, claiming only
                                          those attestation levels, for those numbers (+prefix*: the numbers that extend
                                          the prefix by at least one digit; default: what the credentials cover)
  api-key bind <id> --credentials <name,...> [--attest A,B,C] [--numbers <...>]
                                          bind (again) a signing key; one bound to none signs nothing
  api-key list
  api-key revoke <id>
  api-key delete <id>                     remove a key that left no record (no approvals, events, webhooks): one made
                                          to try something; any other is revoked instead`

export const API_KEY_OPTIONS = {
  vendor: { type: 'string' }, scopes: { type: 'string' }, rate: { type: 'string' },
  credentials: { type: 'string' }, attest: { type: 'string' }, numbers: { type: 'string' },
} as const

/** The binding the options give, its credentials checked to exist: a typo would otherwise bind to nothing. */
async function bindingOf(service: Service, values: Parsed['values']): Promise<SigningBinding | undefined> {
  const credentials = optional(values, 'credentials')
  const attest = optional(values, 'attest')
  const numbers = optional(values, 'numbers')
  if (credentials === undefined) {
    if (attest !== undefined || numbers !== undefined) throw new UsageError('--attest and --numbers bind a signing key: give --credentials too')
    return undefined
  }
  const binding = parseSigningBinding({ credentials, ...(attest === undefined ? {} : { attest }), ...(numbers === undefined ? {} : { numbers }) })
  const known = new Set((await listCredentials(service.db)).map((c) => c.name))
  const missing = binding.credentials.filter((c) => !known.has(c))
  if (missing.length > 0) throw new ValidationError(`no signing credential ${missing.join(', ')} (kns shaken credential list)`, { field: 'credentials' })
  return binding
}

function describeBinding(signing: SigningBinding | null): string {
  if (signing === null) return 'bound to no credential: signs nothing'
  return `credentials ${signing.credentials.join(',')}, attest ${signing.attest.join(',')}${signing.numbers === null ? '' : `, numbers ${signing.numbers.join(',')}`}`
}

const signingPart = (k: ApiKey) => (k.scopes.includes('signing') ? { signing: k.signing } : {})

/** kns api-key create | bind | list | revoke | delete */
export async function apiKeyCommand(service: Service, sub: string | undefined, { values, positionals }: Parsed, out: Output): Promise<void> {
  if (sub === 'create') {
    const vendor = optional(values, 'vendor')
    if (vendor === undefined) throw new UsageError('--vendor is required')
    const rateRaw = optional(values, 'rate')
    if (rateRaw !== undefined && !/^\d+$/.test(rateRaw)) throw new UsageError('--rate must be a whole number of requests per second')
    const scopesRaw = optional(values, 'scopes')
    const signing = await bindingOf(service, values)
    const key = await createApiKey(service.db, {
      vendor,
      rate: rateRaw === undefined ? service.config.defaultKeyRate : Number(rateRaw),
      ...(scopesRaw === undefined ? {} : { scopes: parseScopes(scopesRaw) }),
      ...(signing === undefined ? {} : { signing }),
    })
    const signingLine = key.scopes.includes('signing') ? `signing: ${describeBinding(key.signing)}\n` : ''
    return out.result({ id: key.id, key: key.key, vendor: key.vendor, scopes: key.scopes, rate: key.rate, ...signingPart(key) },
      `created API key ${key.id} for ${key.vendor} (scopes ${key.scopes.join(',')}, ${key.rate} req/s)\n${signingLine}\n  ${key.key}\n\n` +
      'It is shown only this once; only its hash is stored.')
  }
  if (sub === 'bind') {
    const id = positionals[2]
    const binding = await bindingOf(service, values)
    if (id === undefined || binding === undefined) throw new UsageError('usage: kns api-key bind <id> --credentials <name,...> [--attest A,B,C] [--numbers <...>]')
    const key = await bindSigningKey(service.db, id, binding)
    return out.result({ id: key.id, vendor: key.vendor, signing: key.signing }, `API key ${key.id} (${key.vendor}): ${describeBinding(key.signing)}`)
  }
  if (sub === 'list') {
    const keys = await listApiKeys(service.db)
    const lines = keys.map((k) => `${k.id}  ${k.revokedAt === null ? 'active ' : 'revoked'}  ${k.scopes.join(',').padEnd(22)} ${String(k.rate).padStart(6)}/s  ${k.vendor}` +
      (k.scopes.includes('signing') ? `\n${' '.repeat(27)}signing: ${describeBinding(k.signing)}` : ''))
    return out.result({
      keys: keys.map((k) => ({ id: k.id, vendor: k.vendor, scopes: k.scopes, rate: k.rate, ...signingPart(k),
        createdAt: new Date(k.createdAt).toISOString(), revokedAt: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString() })),
    }, keys.length === 0 ? 'no API keys' : lines.join('\n'))
  }
  if (sub === 'revoke') {
    const id = positionals[2]
    if (id === undefined) throw new UsageError('usage: kns api-key revoke <id>')
    const key = await revokeApiKey(service.db, id)
    return out.result({ id: key.id, vendor: key.vendor, revokedAt: new Date(key.revokedAt!).toISOString() }, `revoked API key ${key.id} (${key.vendor})`)
  }
  if (sub === 'delete') {
    const id = positionals[2]
    if (id === undefined) throw new UsageError('usage: kns api-key delete <id>')
    const deleted = await deleteApiKey(service.db, id)
    return out.result({ deleted: deleted.id }, `deleted API key ${deleted.id} (${deleted.vendor})`)
  }
  throw new UsageError(`unknown command 'kns api-key ${sub ?? ''}'`)
}
