/**
 * Every operation of the served OpenAPI document shows an example request (a body, and each
 * parameter, when it takes them) and an example answer; and every example is valid under its
 * own schema, as Fastify's Ajv (same options, src/http/app.ts VALIDATION) validates requests.
 * An example that drifts from its schema fails here, not in an integrator's hands.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import AjvCompiler from '@fastify/ajv-compiler'
import { VALIDATION } from '../../src/http/app.ts'
import { startHarness, type Harness } from '../helpers.ts'

type Json = Record<string, unknown>
interface Example { value?: unknown }
interface Media { schema?: Json; examples?: Record<string, Example> }
interface Parameter { name: string; in: string; schema?: Json; examples?: Record<string, Example> }
interface Operation { parameters?: Parameter[]; requestBody?: { content: Record<string, Media> }; responses: Record<string, { content?: Record<string, Media> }> }
interface Document { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Json> } }

const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete'])

let h: Harness
let doc: Document
before(async () => {
  h = await startHarness()
  doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json()
})
after(async () => { await h.close() })

function operations(): Array<{ name: string; op: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item)
    .filter(([method]) => METHODS.has(method)).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })))
}

/** The document's `#/components/schemas/X` references, by the names the validator knows them (their $id). */
function localRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(localRefs)
  if (schema === null || typeof schema !== 'object') return schema
  return Object.fromEntries(Object.entries(schema).map(([key, value]) =>
    [key, key === '$ref' && typeof value === 'string' ? value.replace('#/components/schemas/', '') : localRefs(value)]))
}

/** `schema` with every object that names its properties closed to others (a map, with additionalProperties of its own, stays open). */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed)
  if (schema === null || typeof schema !== 'object') return schema
  const out: Json = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, closed(value)]))
  if (out.properties !== undefined && out.additionalProperties === undefined && out.patternProperties === undefined) out.additionalProperties = false
  return out
}

/**
 * Fastify's own validator compiler with the app's options (the document's components are its
 * shared schemas); then the same against the schema closed, where the validator removes what
 * the schema does not name: a misspelt optional field, which an open object lets through,
 * shows as a change.
 */
function validator(): (schema: Json, value: unknown) => string | null {
  const shared = Object.fromEntries(Object.entries(doc.components.schemas).map(([name, s]) => [name, { ...(localRefs(s) as Json), $id: name }]))
  const compile = AjvCompiler()(shared, VALIDATION)
  return (schema, value) => {
    const request = { schema: localRefs(schema) as Json, method: 'POST', url: '/', httpPart: 'body' }
    const validate = compile(request)
    if (!validate(structuredClone(value))) return JSON.stringify(validate.errors)
    const copy: unknown = structuredClone(value)
    compile({ ...request, schema: closed(request.schema) as Json })(copy)
    return JSON.stringify(copy) === JSON.stringify(value) ? null : `it has properties its schema does not name: ${JSON.stringify(copy)}`
  }
}

function examplesOf(holder: { examples?: Record<string, Example> } | undefined): unknown[] {
  return Object.values(holder?.examples ?? {}).map((e) => e.value)
}

test('every operation has an example answer (unless it answers 204), and an example request when it takes a body or parameters', () => {
  const ops = operations()
  assert.ok(ops.length >= 37, `${ops.length} operations`)
  const missing: string[] = []
  for (const { name, op } of ops) {
    for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
      if (type === 'application/json' && examplesOf(media).length === 0) missing.push(`${name}: request body`)
    }
    for (const p of op.parameters ?? []) if (examplesOf(p).length === 0) missing.push(`${name}: ${p.in} parameter ${p.name}`)
    // 204 No Content has nothing to exemplify.
    const answered = Object.entries(op.responses).some(([status, r]) => status === '204' || (/^2/.test(status) && Object.values(r.content ?? {}).some((m) => examplesOf(m).length > 0)))
    if (!answered) missing.push(`${name}: an answer`)
  }
  assert.deepEqual(missing, [], 'examples missing')
})

test('every example is valid under its own schema, as Fastify validates', () => {
  const check = validator()
  const invalid: string[] = []
  let checked = 0
  const each = (where: string, schema: Json | undefined, values: unknown[]) => {
    for (const value of values) {
      assert.ok(schema, `${where}: an example without a schema`)
      checked++
      const why = check(schema, value)
      if (why !== null) invalid.push(`${where}: ${why}`)
    }
  }
  for (const { name, op } of operations()) {
    for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) each(`${name} request ${type}`, media.schema, examplesOf(media))
    for (const p of op.parameters ?? []) each(`${name} ${p.in} parameter ${p.name}`, p.schema, examplesOf(p))
    for (const [status, r] of Object.entries(op.responses)) {
      for (const [type, media] of Object.entries(r.content ?? {})) each(`${name} answer ${status} ${type}`, media.schema, examplesOf(media))
    }
  }
  assert.deepEqual(invalid, [])
  assert.ok(checked >= 37 * 2, `${checked} examples checked`)
})

test('the check refuses an example its schema does not allow', () => {
  const check = validator()
  const media = doc.paths['/numsys/approval-phone']!.post!.requestBody!.content['application/json']!
  const [body] = examplesOf(media) as Json[]
  assert.equal(check(media.schema!, body), null)
  assert.match(check(media.schema!, { ...body, method: 'maybe' }) ?? '', /allowedValues/)
  assert.match(check(media.schema!, { ...body, phoneNumber: '0800 FLOWERS' }) ?? '', /pattern/)
  const details = doc.paths['/numsys/transaction_details']!.get!.responses['200']!.content!['application/json']!
  const [answer] = examplesOf(details) as Json[]
  assert.match(check(details.schema!, { ...answer, createdAt: 'yesterday' }) ?? '', /format/)
  assert.match(check(details.schema!, { ...answer, cancelreason: 'denied' }) ?? '', /does not name/)
})
