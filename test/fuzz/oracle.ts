/**
 * What a request deserves, decided from the OpenAPI document alone, and whether the answer
 * lives up to it. A request the document accepts may still get a 4xx (semantic checks: a
 * period with start >= end, an unknown approval number); one it rejects must get a 4xx, and
 * the precise one where docs/api.md is precise (401 before anything about the body, 405 with
 * Allow, 415). Never a 5xx; every error in the one shape.
 */
import type { LightMyRequestResponse } from 'fastify'
import { conformance, type JsonSchema } from './json-schema.ts'
import { parameterSchema, type FuzzCase, type Operation, type OtherCamaraToken } from './openapi-operations.ts'

export type Expectation =
  | { kind: 'accept' }
  | { kind: 'reject'; why: string; statuses?: number[]; allow?: string[] }

export interface OracleContext {
  ops: readonly Operation[]
  apiKey: string
  /** The valid CAMARA access token the valid requests carry, and the others they sometimes carry instead. */
  camaraToken: string
  otherCamaraTokens?: readonly OtherCamaraToken[]
  resolve(ref: string): JsonSchema
}

const ERROR_KEYS = ['success', 'code', 'error', 'message', 'requestId', 'field']
/** Status of each documented code (docs/failure-codes.md). */
const CODE_STATUS: Record<string, number> = {
  INVALID_REQUEST: 400, UNAUTHORIZED: 401, FORBIDDEN: 403, NOT_FOUND: 404, METHOD_NOT_ALLOWED: 405, CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413, UNSUPPORTED_MEDIA_TYPE: 415, RATE_LIMITED: 429,
}

function pathPattern(template: string): RegExp {
  const parts = template.split(/\{[^}]+\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^${parts.join('([^/]+)')}$`)
}

/** As the server's query parser (fast-querystring) reads it: malformed escapes stay as sent. */
function decodeComponent(text: string): string {
  const plus = text.replace(/\+/g, ' ')
  try { return decodeURIComponent(plus) } catch { return plus }
}

export function parseQuery(raw: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null)
  for (const part of raw.split('&')) {
    if (part === '') continue
    const eq = part.indexOf('=')
    const key = decodeComponent(eq < 0 ? part : part.slice(0, eq))
    const value = eq < 0 ? '' : decodeComponent(part.slice(eq + 1))
    const prior = out[key]
    out[key] = prior === undefined ? value : [prior, value].flat()
  }
  return out
}

/** The payload as the server decodes it (UTF-8; invalid sequences become U+FFFD). */
export function payloadText(payload: string | Buffer | undefined): string {
  if (payload === undefined) return ''
  return (typeof payload === 'string' ? Buffer.from(payload) : payload).toString('utf8')
}

function mediaType(headers: Record<string, string>): string | undefined {
  return headers['content-type']?.split(';')[0]?.trim().toLowerCase()
}

/** A parameter's text as the typed value it stands for (OpenAPI serializes numbers and booleans as text). */
function typedParameter(schema: JsonSchema, value: unknown): unknown {
  const types = [schema.type].flat()
  if (typeof value !== 'string') return value
  if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(value)) return Number(value)
  if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true'
  return value
}

/** What the document says about this request. */
export function classify(c: FuzzCase, ctx: OracleContext): Expectation {
  const { method, url, headers } = c.request
  const [path = '', query = ''] = url.split(/\?(.*)/s)
  const onPath = ctx.ops.filter((op) => pathPattern(op.path).test(path))
  if (onPath.length === 0) return { kind: 'reject', why: 'no such path' }
  const allow = [...new Set(onPath.flatMap((op) => (op.method === 'GET' ? ['GET', 'HEAD'] : [op.method])))]
  const op = onPath.find((o) => o.method === method || (method === 'HEAD' && o.method === 'GET'))
  if (op === undefined) return { kind: 'reject', why: `${method} is not allowed here`, statuses: [405], allow }

  if (op.apiKeyHeader !== undefined && headers[op.apiKeyHeader] !== ctx.apiKey) {
    return { kind: 'reject', why: 'no valid API key', statuses: [401] }
  }
  if (op.bearerToken === true && headers.authorization !== `Bearer ${ctx.camaraToken}`) {
    const other = ctx.otherCamaraTokens?.find((t) => headers.authorization === `Bearer ${t.token}`)
    if (other === undefined) return { kind: 'reject', why: 'no valid access token', statuses: [401] }
    // Scopes before anything about the request (x-correlator, body): 403 whatever else is wrong.
    if (!(op.bearerScopes ?? []).some((scopes) => scopes.every((s) => other.scopes.includes(s)))) {
      return { kind: 'reject', why: `the ${other.what} token has none of the operation's scopes`, statuses: [403] }
    }
  }
  const pathValues = pathPattern(op.path).exec(path)!.slice(1).map(decodeComponent)
  const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)
  const params: Record<string, Record<string, unknown>> = {
    path: Object.fromEntries(names.map((n, i) => [n, pathValues[i]])),
    query: parseQuery(query),
    header: Object.fromEntries(op.params.filter((p) => p.in === 'header' && headers[p.name.toLowerCase()] !== undefined).map((p) => [p.name, headers[p.name.toLowerCase()]])),
  }
  for (const location of ['path', 'query', 'header'] as const) {
    const typed = Object.fromEntries(Object.entries(params[location]!).map(([name, value]) => {
      const param = op.params.find((p) => p.in === location && p.name === name)
      return [name, param === undefined ? value : typedParameter(param.schema, value)]
    }))
    const why = conformance(parameterSchema(op, location), typed, ctx)
    if (why !== null) return { kind: 'reject', why: `${location} ${why}` }
  }

  const text = payloadText(c.request.payload)
  const media = mediaType(headers)
  const accepted = op.body?.mediaTypes ?? ['application/json']
  // The other documented media types (NDJSON) are plain strings to the document: any text will do.
  if (media !== undefined && media !== 'application/json' && accepted.includes(media)) return { kind: 'accept' }
  // Whitespace is not a JSON value: an empty body, as "takes no body" routes document.
  if (text.trim() === '') return op.body?.required === true ? { kind: 'reject', why: 'body required' } : { kind: 'accept' }
  if (media === undefined || !accepted.includes(media)) return { kind: 'reject', why: `content type ${String(media)}`, statuses: [415] }
  let value: unknown
  try { value = JSON.parse(text) } catch { return { kind: 'reject', why: 'body is not JSON' } }
  if (op.body === undefined) return { kind: 'accept' }
  const why = conformance(op.body.schema, value, ctx)
  return why === null ? { kind: 'accept' } : { kind: 'reject', why: `body ${why}` }
}

/** Ajv's wording (through the error handler's `body: field ...`): a schema rejection, not a semantic check. */
const SCHEMA_REJECTION = /^(body|querystring|params|headers)\b.*\b(must match pattern|must be (string|integer|number|object|array|boolean|null)\b|must NOT have|must be [<>]=?|is required|must be one of|must match format|must match a schema in|must be equal to)/

function documentedKeys(op: Operation | undefined, status: number): Set<string> {
  const schema = op?.responses[String(status)] ?? op?.responses[`${String(status)[0]}XX`]
  return new Set([...ERROR_KEYS, ...Object.keys((schema?.properties ?? {}) as object)])
}

/** Status of each Commonalities 0.6 code the CAMARA routes answer. */
const CAMARA_CODE_STATUS: Record<string, number> = {
  INVALID_ARGUMENT: 400, OUT_OF_RANGE: 400, UNAUTHENTICATED: 401, PERMISSION_DENIED: 403, NOT_FOUND: 404, IDENTIFIER_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405, UNSUPPORTED_MEDIA_TYPE: 415, SERVICE_NOT_APPLICABLE: 422, MISSING_IDENTIFIER: 422, UNNECESSARY_IDENTIFIER: 422,
  TOO_MANY_REQUESTS: 429, QUOTA_EXCEEDED: 429, INTERNAL: 500, UNAVAILABLE: 503,
}
/** The codes SIM Swap Subscriptions adds (its CreateSubscriptionBadRequest400 and Generic409): on its operations only. */
const SUBSCRIPTION_CODE_STATUS: Record<string, number> = {
  INVALID_PROTOCOL: 400, INVALID_CREDENTIAL: 400, INVALID_TOKEN: 400, INVALID_SINK: 400, ABORTED: 409, ALREADY_EXISTS: 409,
}
const isSubscriptionsOperation = (op: Operation) => op.path.startsWith('/sim-swap-subscriptions/')
const X_CORRELATOR = /^[a-zA-Z0-9-_:;.\/<>{}]{0,256}$/

/** An operation whose errors are CAMARA's `{status, code, message}` (its documented 4XX has `status`, not `success`). */
export function answersInCamaraShape(op: Operation): boolean {
  const props = (op.responses['4XX']?.properties ?? {}) as Record<string, unknown>
  return 'status' in props && !('success' in props)
}

/** CAMARA's error shape, exactly; and the request's x-correlator, when valid, echoed. */
function camaraErrorProblems(c: FuzzCase, res: LightMyRequestResponse): string[] {
  const problems: string[] = []
  if (!/^application\/json/.test(String(res.headers['content-type'] ?? ''))) problems.push(`error content-type "${String(res.headers['content-type'])}"`)
  let body: Record<string, unknown>
  try { body = JSON.parse(res.body) as Record<string, unknown> } catch { return [...problems, 'error body is not JSON'] }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [...problems, 'error body is not an object']
  const keys = Object.keys(body).sort().join(',')
  if (keys !== 'code,message,status') problems.push(`CAMARA error fields ${keys}`)
  if (body.status !== res.statusCode) problems.push(`status ${JSON.stringify(body.status)} in a ${res.statusCode} answer`)
  const codes = isSubscriptionsOperation(c.op) ? { ...CAMARA_CODE_STATUS, ...SUBSCRIPTION_CODE_STATUS } : CAMARA_CODE_STATUS
  if (typeof body.code !== 'string' || codes[body.code] === undefined) problems.push(`code ${JSON.stringify(body.code)} is not a code of this API`)
  else if (codes[body.code] !== res.statusCode) problems.push(`code ${body.code} with status ${res.statusCode}`)
  if (typeof body.message !== 'string' || body.message === '') problems.push('message is not a non-empty string')
  if (/\bat .*\.(ts|js|mjs):\d+|"stack"|node_modules|\/src\//.test(res.body)) problems.push('internals leaked')
  return problems
}

/** On every answer of a CAMARA route, success or error: the request's x-correlator back when it was a valid one. */
function correlatorProblems(c: FuzzCase, res: LightMyRequestResponse): string[] {
  const correlator = c.request.headers['x-correlator']
  if (correlator === undefined || correlator === '' || !X_CORRELATOR.test(correlator)) return []
  return res.headers['x-correlator'] === correlator ? [] : [`x-correlator not echoed on a ${res.statusCode}`]
}

function errorShapeProblems(res: LightMyRequestResponse, documented: Set<string>): string[] {
  const problems: string[] = []
  const type = String(res.headers['content-type'] ?? '')
  if (!/^application\/json/.test(type)) problems.push(`error content-type "${type}"`)
  let body: Record<string, unknown>
  try { body = JSON.parse(res.body) as Record<string, unknown> } catch { return [...problems, 'error body is not JSON'] }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [...problems, 'error body is not an object']
  if (body.success !== false) problems.push('success is not false')
  if (typeof body.code !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(body.code)) problems.push(`code ${JSON.stringify(body.code)}`)
  else if (CODE_STATUS[body.code] !== undefined && CODE_STATUS[body.code] !== res.statusCode) problems.push(`code ${body.code} with status ${res.statusCode}`)
  if (typeof body.error !== 'string' || body.error === '') problems.push('error is not a non-empty string')
  if (body.message !== body.error) problems.push('message differs from error')
  if (typeof body.requestId !== 'string' || body.requestId !== res.headers['x-request-id']) problems.push('requestId missing or not the x-request-id header')
  if (body.field !== undefined && typeof body.field !== 'string') problems.push('field is not a string')
  const extra = Object.keys(body).filter((k) => !documented.has(k))
  if (extra.length > 0) problems.push(`undocumented error fields ${extra.join(', ')}`)
  if (/\bat .*\.(ts|js|mjs):\d+|"stack"|node_modules|\/src\//.test(res.body)) problems.push('internals leaked')
  return problems
}

/** Everything wrong with `res` as the answer to `c` under `expectation`; [] when nothing is. */
export function responseProblems(c: FuzzCase, expectation: Expectation, res: LightMyRequestResponse): string[] {
  const problems: string[] = []
  const status = res.statusCode
  const head = c.request.method === 'HEAD'
  if (status >= 500) problems.push(`server error ${status}`)
  if (res.headers['x-request-id'] === undefined) problems.push('no x-request-id header')
  if (expectation.kind === 'reject') {
    if (status < 400 || status >= 500) problems.push(`accepted (${status}) a request it must reject: ${expectation.why}`)
    else if (expectation.statuses !== undefined && !expectation.statuses.includes(status)) {
      problems.push(`${status} where ${expectation.statuses.join('/')} was due (${expectation.why})`)
    }
    if (status === 405 && expectation.allow !== undefined) {
      const allow = String(res.headers.allow ?? '').split(',').map((m) => m.trim().toUpperCase()).filter(Boolean)
      const missing = expectation.allow.filter((m) => !allow.includes(m))
      if (missing.length > 0) problems.push(`405 whose Allow "${String(res.headers.allow ?? '')}" lacks ${missing.join(', ')}`)
    }
  }
  if (expectation.kind === 'accept' && status === 400 && !head) {
    let text: unknown
    try {
      const body = JSON.parse(res.body) as { error?: unknown; message?: unknown }
      text = answersInCamaraShape(c.op) ? body.message : body.error
    } catch { text = undefined }
    if (typeof text === 'string' && SCHEMA_REJECTION.test(text)) problems.push(`schema validation refused a request the document accepts: ${text}`)
  }
  if (answersInCamaraShape(c.op)) problems.push(...correlatorProblems(c, res))
  if (head) {
    if (res.body !== '') problems.push('HEAD answered with a body')
  } else if (res.body === '' && status !== 204 && status !== 304) {
    problems.push(`empty body with ${status}`)
  } else if (status >= 400 && answersInCamaraShape(c.op)) {
    // Every answer under a CAMARA route's prefix (mutants keep it): 404 and 405 included.
    problems.push(...camaraErrorProblems(c, res))
  } else if (status >= 400) {
    const op = expectation.kind === 'reject' && expectation.statuses?.includes(405) ? undefined : c.op
    problems.push(...errorShapeProblems(res, documentedKeys(op, status)))
  }
  return problems
}
