/**
 * One mutation of a valid request: a field dropped or of the wrong type, numbers no parser
 * should trust, overlong or hostile strings, broken or deeply nested JSON, a wrong content
 * type, a bad API key, poisoned query strings, a wrong method, junk after the path. Whether
 * the result must be rejected is for the oracle to say (a NUL is fine in some fields).
 */
import fc from 'fast-check'
import { HOSTILE_CHARS } from './json-schema.ts'
import type { FuzzCase, FuzzRequest, Operation } from './openapi-operations.ts'

export interface MutationContext {
  ops: readonly Operation[]
  apiKey: string
  revokedKey: string
  /** The valid CAMARA access token, and well-formed ones that must be refused (expired, forged, wrong audience). */
  camaraToken: string
  refusedCamaraTokens: readonly string[]
}

interface Mutator {
  name: string
  applies(c: FuzzCase): boolean
  arbitrary(c: FuzzCase, ctx: MutationContext): fc.Arbitrary<FuzzCase>
}

type JsonPath = (string | number)[]

/** Every node of a JSON value (the root first), at most `limit`. */
function nodes(value: unknown, limit = 200): { path: JsonPath; value: unknown }[] {
  const out: { path: JsonPath; value: unknown }[] = []
  const walk = (v: unknown, path: JsonPath) => {
    if (out.length >= limit) return
    out.push({ path, value: v })
    if (Array.isArray(v)) v.forEach((item, i) => walk(item, [...path, i]))
    else if (typeof v === 'object' && v !== null) for (const [k, item] of Object.entries(v)) walk(item, [...path, k])
  }
  walk(value, [])
  return out
}

const show = (path: JsonPath) => `body${path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('')}`

/** `value` with the node at `path` replaced (or removed, for `REMOVE`). */
const REMOVE = Symbol('remove')
function replaced(value: unknown, path: JsonPath, next: unknown): unknown {
  if (path.length === 0) return next
  const copy = structuredClone(value) as Record<string | number, unknown>
  let parent = copy
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>
  const last = path[path.length - 1]!
  if (next !== REMOVE) parent[last] = next
  else if (Array.isArray(parent)) parent.splice(last as number, 1)
  else delete parent[last]
  return copy
}

/** JSON text of `value` with the node at `path` written as `raw` (number literals JSON.stringify cannot produce, nesting). */
function withRaw(value: unknown, path: JsonPath, raw: string): string {
  const marker = `__fuzz_raw_${Math.random().toString(36).slice(2)}__`
  return JSON.stringify(replaced(value, path, marker)).replace(`"${marker}"`, () => raw)
}

function withBody(c: FuzzCase, mutation: string, payload: string | Buffer, body?: unknown): FuzzCase {
  const request: FuzzRequest = { ...c.request, headers: { ...c.request.headers }, payload }
  return body === undefined ? { op: c.op, request, mutation } : { op: c.op, request, body, mutation }
}

/** The same body (so that a second mutation can still work on it), another method, URL or headers. */
function withRequest(c: FuzzCase, mutation: string, change: Partial<FuzzRequest>): FuzzCase {
  return { ...c, request: { ...c.request, headers: { ...c.request.headers }, ...change }, mutation }
}

const hasJsonBody = (c: FuzzCase) => c.body !== undefined
const pickNode = (c: FuzzCase, filter: (v: unknown) => boolean = () => true) => {
  const all = nodes(c.body)
  const matching = all.filter((n) => filter(n.value))
  return fc.constantFrom(...(matching.length > 0 ? matching : all))
}

const WRONG_TYPES = [null, true, false, 0, -1.5, '', 'x', [], {}, ['x'], { a: 1 }]
const NUMBER_LITERALS = ['-1', '1e308', '-1e308', '9223372036854775807', '18446744073709551615', '9007199254740993',
  '-9223372036854775809', '1e-400', '-0', '0.5', '1E+2', '123456789012345678901234567890']
const LONG_LENGTHS = [65, 129, 256, 257, 2001, 16385, 70_000]
const C0_C1 = fc.oneof(fc.integer({ min: 0, max: 0x1f }), fc.integer({ min: 0x7f, max: 0x9f })).map((c) => String.fromCharCode(c))
const MALFORMED_JSON = ['{', '[', '}', 'nul', 'tru', '{"a":}', "{'a':1}", '{"a":1,}', '[1,]', 'NaN', 'Infinity', '-', '"\\x41"',
  '"\\u12"', '{"a" 1}', '/* */{}', '{}{}', '\u0000', '"unterminated', '{"a":1}}', '{"__proto__":{"polluted":1}}']
/** Byte sequences that are not UTF-8: a CESU-8 lone surrogate, an overlong NUL, stray continuation and 0xFF bytes. */
const BAD_UTF8 = [[0xed, 0xa0, 0x80], [0xc0, 0x80], [0x80], [0xff, 0xfe], [0xf4, 0x90, 0x80, 0x80]]
const WRONG_TYPES_CT = ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x',
  'application/jsonx', 'text/json', 'application/x-ndjson', 'application/octet-stream', '*/*', 'json']
const QUERY_VALUES = ['%00', '%ZZ', '%', '%u0041', '%C0%80', '%ED%A0%80', '%E2%80%AE', '%0A', 'a%00b', '', 'x'.repeat(65), 'x'.repeat(5000)]
/** Junk after a path. No dot segments: URL parsers (light-my-request's too) resolve them away before the server sees them. */
const PATH_JUNK = ['/', '/x', '%00', '%ZZ', '//', '.json', ';a', '%2F', '%C3%A9', '/%00', '%20', '~']
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']

const MUTATORS: Mutator[] = [
  {
    name: 'drop field',
    applies: (c) => nodes(c.body).some((n) => typeof n.value === 'object' && n.value !== null && Object.keys(n.value).length > 0),
    arbitrary: (c) => pickNode(c, (v) => typeof v === 'object' && v !== null && Object.keys(v).length > 0).chain(({ path, value }) =>
      fc.constantFrom(...Object.keys(value as object)).map((key) => {
        const k: string | number = Array.isArray(value) ? Number(key) : key
        const body = replaced(c.body, [...path, k], REMOVE)
        return withBody(c, `drop ${show([...path, k])}`, JSON.stringify(body), body)
      })),
  },
  {
    name: 'wrong type',
    applies: hasJsonBody,
    arbitrary: (c) => fc.tuple(pickNode(c), fc.constantFrom(...WRONG_TYPES)).map(([{ path }, wrong]) => {
      const body = replaced(c.body, path, wrong)
      return withBody(c, `${show(path)} = ${JSON.stringify(wrong)}`, JSON.stringify(body), body)
    }),
  },
  {
    name: 'number literal',
    applies: hasJsonBody,
    arbitrary: (c) => fc.tuple(pickNode(c, (v) => typeof v === 'number'), fc.constantFrom(...NUMBER_LITERALS))
      .map(([{ path }, literal]) => withBody(c, `${show(path)} = ${literal}`, withRaw(c.body, path, literal))),
  },
  {
    name: 'overlong string',
    applies: hasJsonBody,
    arbitrary: (c) => fc.tuple(pickNode(c, (v) => typeof v === 'string'), fc.constantFrom(...LONG_LENGTHS), fc.constantFrom('a', 'é', '\u{1f600}'))
      .map(([{ path }, n, ch]) => {
        const body = replaced(c.body, path, ch.repeat(n))
        return withBody(c, `${show(path)} = "${ch}" x ${n}`, JSON.stringify(body), body)
      }),
  },
  {
    name: 'hostile characters',
    applies: (c) => nodes(c.body).some((n) => typeof n.value === 'string'),
    arbitrary: (c) => fc.tuple(pickNode(c, (v) => typeof v === 'string'), fc.oneof(fc.constantFrom(...HOSTILE_CHARS), C0_C1), fc.nat(), fc.boolean())
      .map(([{ path, value }, ch, pos, replace]) => {
        const chars = [...(value as string)]
        const i = chars.length === 0 ? 0 : pos % chars.length
        chars.splice(i, replace ? 1 : 0, ch)
        const body = replaced(c.body, path, chars.join(''))
        return withBody(c, `${show(path)} with ${JSON.stringify(ch)} at ${i}`, JSON.stringify(body), body)
      }),
  },
  {
    name: 'invalid UTF-8',
    applies: (c) => nodes(c.body).some((n) => typeof n.value === 'string'),
    arbitrary: (c) => fc.tuple(pickNode(c, (v) => typeof v === 'string'), fc.constantFrom(...BAD_UTF8)).map(([{ path }, bytes]) => {
      const [before, after] = withRaw(c.body, path, '"\u0000"').split('\u0000') as [string, string]
      const payload = Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)])
      return withBody(c, `${show(path)} = bytes ${bytes.map((b) => b.toString(16)).join(' ')}`, payload)
    }),
  },
  {
    name: 'malformed JSON',
    applies: (c) => c.request.method !== 'GET' && c.request.method !== 'HEAD',
    arbitrary: (c) => {
      const text = typeof c.request.payload === 'string' && c.request.payload !== '' ? c.request.payload : '{"a":1}'
      const truncated = fc.integer({ min: 1, max: Math.max(1, text.length - 1) }).map((n) => text.slice(0, n))
      return fc.oneof(fc.constantFrom(...MALFORMED_JSON), truncated, fc.constantFrom('}', ',', 'x', ']').map((junk) => text + junk))
        .map((payload) => withBody(c, `payload ${JSON.stringify(payload.length > 80 ? `${payload.slice(0, 80)}...` : payload)}`, payload))
        .map((m) => ({ ...m, request: { ...m.request, headers: { ...m.request.headers, 'content-type': 'application/json' } } }))
    },
  },
  {
    name: 'deep nesting',
    applies: (c) => c.request.method !== 'GET' && c.request.method !== 'HEAD',
    arbitrary: (c) => fc.tuple(c.body === undefined ? fc.constant({ path: [] as JsonPath }) : pickNode(c), fc.constantFrom(1000, 3000, 5000), fc.boolean())
      .map(([{ path }, depth, arrays]) => {
        const raw = arrays ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}0${'}'.repeat(depth)}`
        const m = withBody(c, `${show(path)} = ${arrays ? '[' : '{"a":'} x ${depth}`, withRaw(c.body ?? {}, path, raw))
        m.request.headers['content-type'] = 'application/json'
        return m
      }),
  },
  {
    name: 'content type',
    applies: (c) => c.request.method !== 'GET' && c.request.method !== 'HEAD',
    arbitrary: (c) => {
      const own = new Set(c.op.body?.mediaTypes ?? ['application/json'])
      const payload = c.request.payload !== undefined && String(c.request.payload).trim() !== '' ? c.request.payload : '{}'
      return fc.option(fc.constantFrom(...WRONG_TYPES_CT.filter((t) => !own.has(t))), { nil: undefined }).map((type) => {
        const m = withBody(c, type === undefined ? 'no content-type' : `content-type ${type}`, payload)
        if (type === undefined) delete m.request.headers['content-type']
        else m.request.headers['content-type'] = type
        return m
      })
    },
  },
  {
    name: 'API key',
    applies: (c) => c.op.apiKeyHeader !== undefined,
    arbitrary: (c, ctx) => {
      const header = c.op.apiKeyHeader!
      const flipped = `${ctx.apiKey.slice(0, -1)}${ctx.apiKey.endsWith('A') ? 'B' : 'A'}`
      const bad = ['', 'x', 'kns_', `kns_${'0'.repeat(16)}_${'A'.repeat(43)}`, flipped, `${ctx.apiKey}x`,
        ctx.apiKey.toUpperCase(), ctx.revokedKey, 'k'.repeat(8000), `${ctx.apiKey}, ${ctx.apiKey}`]
      return fc.option(fc.constantFrom(...bad), { nil: undefined }).map((key) => {
        const m = withRequest(c, key === undefined ? 'no API key' : key === ctx.revokedKey ? 'revoked API key' : `API key ${JSON.stringify(key.slice(0, 60))}`, {})
        if (key === undefined) delete m.request.headers[header]
        else m.request.headers[header] = key
        return m
      })
    },
  },
  {
    name: 'access token',
    applies: (c) => c.op.bearerToken === true,
    arbitrary: (c, ctx) => {
      const token = ctx.camaraToken
      const flipped = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`
      const bad = ['', 'Bearer', 'Bearer ', token, `Basic ${token}`, `Bearer ${flipped}`, `Bearer ${token}x`, `Bearer ${token.split('.').slice(0, 2).join('.')}.`,
        `Bearer ${token}, Bearer ${token}`, `Bearer ${'t'.repeat(8000)}`, ...ctx.refusedCamaraTokens.map((t) => `Bearer ${t}`)]
      return fc.option(fc.constantFrom(...bad), { nil: undefined }).map((value) => {
        const m = withRequest(c, value === undefined ? 'no access token' : `Authorization ${JSON.stringify(value.slice(0, 60))}`, {})
        if (value === undefined) delete m.request.headers.authorization
        else m.request.headers.authorization = value
        return m
      })
    },
  },
  {
    name: 'query',
    applies: () => true,
    arbitrary: (c) => {
      const [path, query = ''] = c.request.url.split(/\?(.*)/s)
      const names = c.op.params.filter((p) => p.in === 'query').map((p) => p.name)
      const name = fc.constantFrom(...(names.length > 0 ? names : ['q']), '%ZZ', '__proto__', 'constructor[prototype][x]')
      const pairs = query === '' ? [] : query.split('&')
      const replace = fc.tuple(name, fc.constantFrom(...QUERY_VALUES)).map(([n, v]) =>
        [...pairs.filter((p) => p.split('=')[0] !== n), `${n}=${v}`].join('&'))
      const repeat = fc.tuple(name, fc.constantFrom(...QUERY_VALUES)).map(([n, v]) => [...pairs, `${n}=${v}`, `${n}=${v}`].join('&'))
      const drop = fc.constant(pairs.slice(1).join('&'))
      return fc.oneof(replace, repeat, drop).map((q) => withRequest(c, `query "${q.slice(0, 80)}"`, { url: q === '' ? path! : `${path}?${q}` }))
    },
  },
  {
    name: 'wrong method',
    applies: () => true,
    arbitrary: (c, ctx) => {
      const taken = new Set(ctx.ops.filter((o) => o.path === c.op.path).flatMap((o) => (o.method === 'GET' ? ['GET', 'HEAD'] : [o.method])))
      const others = METHODS.filter((m) => !taken.has(m))
      return fc.constantFrom(...others).map((method) => {
        const bodyless = method === 'GET' || method === 'HEAD'
        const m = withRequest(c, `method ${method}`, { method })
        if (bodyless) { delete m.request.payload; delete m.request.headers['content-type']; delete m.body }
        return m
      })
    },
  },
  {
    name: 'path junk',
    applies: () => true,
    arbitrary: (c) => fc.constantFrom(...PATH_JUNK).map((junk) => {
      const [path, query] = c.request.url.split(/\?(.*)/s)
      return withRequest(c, `path + "${junk}"`, { url: `${path}${junk}${query === undefined ? '' : `?${query}`}` })
    }),
  },
]

function mutateOnce(c: FuzzCase, ctx: MutationContext): fc.Arbitrary<FuzzCase> {
  return fc.constantFrom(...MUTATORS.filter((m) => m.applies(c))).chain((m) => m.arbitrary(c, ctx))
}

/**
 * Mutants of valid requests: mostly one thing done to one, sometimes two (a bad key and a bad
 * body together tell whether the key is checked first).
 */
export function mutatedCaseArbitrary(valid: fc.Arbitrary<FuzzCase>, ctx: MutationContext): fc.Arbitrary<FuzzCase> {
  const once = valid.chain((c) => mutateOnce(c, ctx))
  const twice = once.chain((first) => mutateOnce(first, ctx).map((second) => ({ ...second, mutation: `${first.mutation}; ${second.mutation}` })))
  return fc.oneof({ weight: 3, arbitrary: once }, { weight: 1, arbitrary: twice })
}

export const MUTATION_NAMES = MUTATORS.map((m) => m.name)
