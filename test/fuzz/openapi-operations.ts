/**
 * The served OpenAPI document -> every operation (path x method) with what a request to it
 * is made of (parameters, JSON body schema, API key header), and fast-check arbitraries of
 * valid requests. Anything in the document this cannot model throws UnsupportedSchemaError:
 * a new route is fuzzed without touching this suite, or the suite says why it cannot be.
 */
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { arbitraryFor, assertSupported, UnsupportedSchemaError, type JsonSchema, type SchemaContext } from './json-schema.ts'

export interface OpenApiDocument {
  openapi: string
  paths: Record<string, Record<string, unknown>>
  components?: { schemas?: Record<string, JsonSchema>; securitySchemes?: Record<string, Record<string, unknown>> }
  security?: Record<string, unknown[]>[]
}

export interface Parameter {
  name: string
  in: 'query' | 'path' | 'header'
  required: boolean
  schema: JsonSchema
}

export interface Operation {
  /** `POST /numsys/approval-phone` */
  id: string
  method: string
  /** The path template, `{name}` for path parameters. */
  path: string
  params: Parameter[]
  body?: { required: boolean; mediaTypes: string[]; schema: JsonSchema }
  /** The header carrying the API key, when the operation requires one. */
  apiKeyHeader?: string
  /** The operation takes an OpenID Connect access token (`Authorization: Bearer`): the CAMARA APIs. */
  bearerToken?: boolean
  /** The token's scopes that will do: all of one requirement's, any one requirement. */
  bearerScopes?: string[][]
  /** Documented JSON response schemas by status key (`200`, `400`, `4XX`...). */
  responses: Record<string, JsonSchema>
}

export interface FuzzRequest {
  method: string
  url: string
  headers: Record<string, string>
  payload?: string | Buffer
}

export interface FuzzCase {
  op: Operation
  request: FuzzRequest
  /** The JSON body as a value, when the payload is that value's JSON text (mutations start from it). */
  body?: unknown
  /** What was done to a valid request, if anything. */
  mutation?: string
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
const OPERATION_KEYS = new Set(['summary', 'description', 'tags', 'operationId', 'deprecated', 'externalDocs', 'parameters', 'requestBody', 'responses', 'security'])
const PATH_ITEM_KEYS = new Set([...METHODS, 'parameters', 'summary', 'description', 'servers'])
/** Media types whose bodies this suite knows how to make from a JSON value. */
const KNOWN_MEDIA_TYPES = new Set(['application/json', 'application/x-ndjson'])

export async function fetchOpenApi(app: FastifyInstance): Promise<OpenApiDocument> {
  const res = await app.inject({ method: 'GET', url: '/openapi.json' })
  if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}: ${res.body}`)
  return res.json() as OpenApiDocument
}

/** A resolver for local `$ref`s (`#/components/schemas/X`, JSON pointer escapes included). */
export function refResolver(doc: OpenApiDocument): (ref: string) => JsonSchema {
  return (ref) => {
    if (!ref.startsWith('#/')) throw new UnsupportedSchemaError(`non-local $ref ${ref}`)
    let node: unknown = doc
    for (const part of ref.slice(2).split('/').map((p) => decodeURIComponent(p).replace(/~1/g, '/').replace(/~0/g, '~'))) {
      node = (node as Record<string, unknown> | undefined)?.[part]
    }
    if (typeof node !== 'object' || node === null) throw new UnsupportedSchemaError(`unresolvable $ref ${ref}`)
    return node as JsonSchema
  }
}

function deref<T>(value: unknown, resolve: (ref: string) => JsonSchema): T {
  const ref = (value as { $ref?: unknown } | undefined)?.$ref
  return (typeof ref === 'string' ? resolve(ref) : value) as T
}

/**
 * What authenticates a request to the operation: an API key in a header, or an OpenID Connect
 * access token (alternatives of one openIdConnect scheme: the same token, other scopes).
 */
function authOf(doc: OpenApiDocument, security: Record<string, unknown[]>[] | undefined, where: string): Pick<Operation, 'apiKeyHeader' | 'bearerToken' | 'bearerScopes'> {
  const requirements = security ?? doc.security ?? []
  // An empty requirement object makes authentication optional: fuzz it as keyless.
  if (requirements.length === 0 || requirements.some((r) => Object.keys(r).length === 0)) return {}
  const names = [...new Set(requirements.flatMap((r) => Object.keys(r)))]
  const schemeOf = (name: string) => doc.components?.securitySchemes?.[name]
  if (names.length === 1 && requirements.every((r) => Object.keys(r).length === 1) && schemeOf(names[0]!)?.type === 'openIdConnect') {
    return { bearerToken: true, bearerScopes: requirements.map((r) => (Object.values(r)[0] ?? []).map(String)) }
  }
  if (requirements.length > 1 || names.length !== 1) throw new UnsupportedSchemaError(`${where}: security alternatives or combinations are not supported`)
  const scheme = schemeOf(names[0]!)
  if (scheme?.type !== 'apiKey' || scheme.in !== 'header' || typeof scheme.name !== 'string') {
    throw new UnsupportedSchemaError(`${where}: security scheme "${names[0]}" is not an apiKey in a header nor openIdConnect`)
  }
  return { apiKeyHeader: scheme.name.toLowerCase() }
}

/** Every operation of the document, in document order. */
export function listOperations(doc: OpenApiDocument): Operation[] {
  const resolve = refResolver(doc)
  const ctx: SchemaContext = { resolve, records: [] }
  const ops: Operation[] = []
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const key of Object.keys(item)) if (!PATH_ITEM_KEYS.has(key)) throw new UnsupportedSchemaError(`${path}: unsupported path item field "${key}"`)
    for (const method of METHODS) {
      const raw = item[method] as Record<string, unknown> | undefined
      if (raw === undefined) continue
      const id = `${method.toUpperCase()} ${path}`
      for (const key of Object.keys(raw)) if (!OPERATION_KEYS.has(key)) throw new UnsupportedSchemaError(`${id}: unsupported operation field "${key}"`)
      const params: Parameter[] = []
      for (const p of [...((item.parameters ?? []) as unknown[]), ...((raw.parameters ?? []) as unknown[])]) {
        const param = deref<Record<string, unknown>>(p, resolve)
        const where = `${id} parameter ${String(param.name)}`
        if (param.in !== 'query' && param.in !== 'path' && param.in !== 'header') throw new UnsupportedSchemaError(`${where}: parameters in "${String(param.in)}" are not supported`)
        if (param.content !== undefined || (param.style !== undefined && param.style !== 'form' && param.style !== 'simple')) {
          throw new UnsupportedSchemaError(`${where}: only schema parameters in the default style are supported`)
        }
        const schema = (param.schema ?? {}) as JsonSchema
        assertSupported(schema, ctx, where)
        params.push({ name: String(param.name), in: param.in, required: param.required === true || param.in === 'path', schema })
      }
      for (const name of [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)) {
        if (!params.some((p) => p.in === 'path' && p.name === name)) throw new UnsupportedSchemaError(`${id}: path parameter {${name}} is not declared`)
      }
      let body: Operation['body']
      if (raw.requestBody !== undefined) {
        const rb = deref<{ required?: boolean; content?: Record<string, { schema?: JsonSchema }> }>(raw.requestBody, resolve)
        const mediaTypes = Object.keys(rb.content ?? {}).map((m) => m.toLowerCase())
        const unknown = mediaTypes.filter((m) => !KNOWN_MEDIA_TYPES.has(m))
        if (unknown.length > 0 || !mediaTypes.includes('application/json')) {
          throw new UnsupportedSchemaError(`${id}: request body media types ${mediaTypes.join(', ')} (needs application/json; knows ${[...KNOWN_MEDIA_TYPES].join(', ')})`)
        }
        const schema = rb.content!['application/json']!.schema ?? {}
        assertSupported(schema, ctx, `${id} body`)
        body = { required: rb.required === true, mediaTypes, schema }
      }
      const responses: Record<string, JsonSchema> = {}
      for (const [status, r] of Object.entries((raw.responses ?? {}) as Record<string, unknown>)) {
        const schema = deref<{ content?: Record<string, { schema?: JsonSchema }> }>(r, resolve).content?.['application/json']?.schema
        if (schema !== undefined) responses[status.toUpperCase()] = deref<JsonSchema>(schema, resolve)
      }
      const auth = authOf(doc, raw.security as Record<string, unknown[]>[] | undefined, id)
      ops.push({ id, method: method.toUpperCase(), path, params, ...(body ? { body } : {}), ...auth, responses })
    }
  }
  return ops
}

/** The parameters of one location as an object schema, so fixtures overlay them like body fields. */
export function parameterSchema(op: Operation, location: Parameter['in']): JsonSchema {
  const ps = op.params.filter((p) => p.in === location)
  return {
    type: 'object',
    properties: Object.fromEntries(ps.map((p) => [p.name, p.schema])),
    required: ps.filter((p) => p.required).map((p) => p.name),
    // Unknown query parameters are harmless to send; unknown headers and path parts are not parameters at all.
    ...(location === 'query' ? {} : { additionalProperties: false }),
  }
}

function paramText(value: unknown, where: string): string {
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (value === null || typeof value === 'object') return JSON.stringify(value)
  throw new UnsupportedSchemaError(`${where}: cannot put ${typeof value} in a URL`)
}

/** Percent-encoded UTF-8; a lone surrogate has no UTF-8 form, so it goes as U+FFFD, as any client would send it. */
const encode = (text: string) => encodeURIComponent(text.toWellFormed())

export function queryString(values: Record<string, unknown>): string {
  const parts: string[] = []
  for (const [name, value] of Object.entries(values)) {
    // Arrays in the default form style: the parameter repeated.
    for (const v of Array.isArray(value) ? value : [value]) parts.push(`${encode(name)}=${encode(paramText(v, name))}`)
  }
  return parts.length === 0 ? '' : `?${parts.join('&')}`
}

/** A valid CAMARA access token besides the main one, and what it grants. */
export interface OtherCamaraToken {
  /** What it is, for the oracle's reasons: `three-legged`, `narrow`. */
  what: string
  token: string
  scopes: readonly string[]
}

export interface RequestContext extends SchemaContext {
  /** A key holding every scope. */
  apiKey: string
  /** A CAMARA access token (two-legged) with every CAMARA scope and the purpose. */
  camaraToken: string
  /** Other valid tokens the valid requests sometimes carry instead (a three-legged one, one with fewer scopes). */
  otherCamaraTokens?: readonly OtherCamaraToken[]
}

/** Valid requests to `op`: parameters and body from their schemas, fixtures overlaid, the key, the content type. */
export function validCaseArbitrary(op: Operation, ctx: RequestContext): fc.Arbitrary<FuzzCase> {
  const location = (l: Parameter['in']) => op.params.some((p) => p.in === l)
    ? arbitraryFor(parameterSchema(op, l), ctx, `${op.id} ${l} parameters`) as fc.Arbitrary<Record<string, unknown>>
    : fc.constant({} as Record<string, unknown>)
  type Body = { value?: unknown; ndjson: boolean }
  let body: fc.Arbitrary<Body> = fc.constant({ ndjson: false })
  if (op.body !== undefined) {
    const value = arbitraryFor(op.body.schema, ctx, `${op.id} body`)
    // NDJSON is the same array, one item per line.
    const ndjson = op.body.mediaTypes.includes('application/x-ndjson') && op.body.schema.type === 'array'
    const present = fc.record({ value, ndjson: ndjson ? fc.boolean() : fc.constant(false) }) as fc.Arbitrary<Body>
    body = op.body.required ? present : fc.oneof({ weight: 4, arbitrary: present }, { weight: 1, arbitrary: fc.constant({ ndjson: false }) })
  }
  // HEAD is answered wherever GET is (Fastify's exposeHeadRoutes): part of the valid surface.
  const method = op.method === 'GET' ? fc.constantFrom('GET', 'GET', 'GET', 'HEAD') : fc.constant(op.method)
  // A header value is visible ASCII (and tabs) on the wire; anything else never reaches a server.
  const header = location('header').filter((h) => Object.entries(h).every(([k, v]) => /^[\t\x20-\x7e]*$/.test(paramText(v, k))))
  const others = (ctx.otherCamaraTokens ?? []).map((t) => t.token)
  const token = others.length === 0 ? fc.constant(ctx.camaraToken)
    : fc.oneof({ weight: 3, arbitrary: fc.constant(ctx.camaraToken) }, { weight: 1, arbitrary: fc.constantFrom(...others) })
  return fc.record({ method, path: location('path'), query: location('query'), header, body, token }).map(({ method, path, query, header, body, token }) => {
    const url = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => encode(paramText(path[name], name))) + queryString(query)
    const headers: Record<string, string> = Object.fromEntries(Object.entries(header).map(([k, v]) => [k.toLowerCase(), paramText(v, k)]))
    if (op.apiKeyHeader !== undefined) headers[op.apiKeyHeader] = ctx.apiKey
    if (op.bearerToken === true) headers.authorization = `Bearer ${token}`
    const request: FuzzRequest = { method, url, headers }
    if (!('value' in body)) return { op, request }
    if (body.ndjson && Array.isArray(body.value)) {
      request.headers['content-type'] = 'application/x-ndjson'
      request.payload = body.value.map((v) => JSON.stringify(v)).join('\n')
      return { op, request }
    }
    request.headers['content-type'] = 'application/json'
    request.payload = JSON.stringify(body.value)
    return { op, request, body: body.value }
  })
}
