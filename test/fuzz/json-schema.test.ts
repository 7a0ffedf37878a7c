/**
 * The fuzz suite's own generators: what they make is valid by their own validator, and what
 * they cannot model fails loudly, naming it (so a new route is never silently skipped).
 */
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { arbitraryFor, conformance, UnsupportedSchemaError, type JsonSchema, type SchemaContext } from './json-schema.ts'
import { listOperations, validCaseArbitrary, type OpenApiDocument } from './openapi-operations.ts'
import { classify, parseQuery } from './oracle.ts'

const components: Record<string, JsonSchema> = {
  Phone: { type: 'string', pattern: '^\\+?[1-9]\\d{5,14}$' },
}
const ctx: SchemaContext = {
  resolve: (ref) => components[ref.replace('#/components/schemas/', '')] ?? assert.fail(`unknown ${ref}`),
  records: [{ phone: '+14155550100', count: 3 }],
}

const SCHEMAS: Record<string, JsonSchema> = {
  'pattern and lengths': { type: 'string', pattern: '^[^\\u0000-\\u001f]*$', minLength: 2, maxLength: 8 },
  'free text up to a bound': { type: 'string', minLength: 1, maxLength: 300 },
  'date-time': { type: 'string', format: 'date-time' },
  'bounded integer past 2^53': { type: 'integer', minimum: 0, maximum: 1e15 },
  'unbounded integer': { type: 'integer', minimum: 0 },
  'number in a range': { type: 'number', minimum: -90, maximum: 90 },
  'exclusive bounds': { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
  'enum, const, anyOf': { anyOf: [{ type: 'string', enum: ['a', 'b'] }, { const: 7 }, { type: 'boolean' }] },
  'array of objects with $ref': {
    type: 'array', maxItems: 5, minItems: 1,
    items: { type: 'object', required: ['phone'], properties: { phone: { $ref: '#/components/schemas/Phone' }, count: { type: 'integer', minimum: 1, maximum: 9 } } },
  },
  'nullable by type list': { type: ['string', 'null'], maxLength: 3 },
}

describe('generated values are valid', () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    test(name, () => {
      fc.assert(fc.property(arbitraryFor(schema, ctx, name), (value) => {
        assert.equal(conformance(schema, value, ctx), null, JSON.stringify(value))
      }), { numRuns: 300 })
    })
  }

  test('fixture records are overlaid by property name', () => {
    const values = fc.sample(arbitraryFor(SCHEMAS['array of objects with $ref']!, ctx, 'x'), { numRuns: 200, seed: 1 }) as { phone: string }[][]
    assert.ok(values.flat().some((o) => o.phone === '+14155550100'))
  })
})

describe('the validator', () => {
  test('rejects what the schema does not allow', () => {
    assert.notEqual(conformance(SCHEMAS['pattern and lengths']!, 'a\u0000b', ctx), null)
    assert.notEqual(conformance(SCHEMAS['pattern and lengths']!, 'a', ctx), null)
    assert.notEqual(conformance(SCHEMAS['bounded integer past 2^53']!, 1e15 + 1, ctx), null)
    assert.notEqual(conformance(SCHEMAS['bounded integer past 2^53']!, 1.5, ctx), null)
    assert.notEqual(conformance(SCHEMAS['date-time']!, '2024-02-30T00:00:00Z', ctx), null)
    assert.notEqual(conformance(SCHEMAS['date-time']!, '2024-02-01T00:00:00', ctx), null)
    assert.notEqual(conformance(SCHEMAS['array of objects with $ref']!, [{ count: 1 }], ctx), null)
    assert.equal(conformance(SCHEMAS['array of objects with $ref']!, [{ phone: '+14155550100', extra: true }], ctx), null)
  })

  test('counts lengths in code points, as Ajv does', () => {
    assert.equal(conformance({ type: 'string', maxLength: 2 }, '\u{1f600}\u{1f600}', ctx), null)
    assert.notEqual(conformance({ type: 'string', maxLength: 2 }, '\u{1f600}\u{1f600}x', ctx), null)
  })
})

describe('unsupported schema features fail loudly, naming them', () => {
  for (const [schema, named] of [
    [{ type: 'string', multipleOf: 2 }, 'multipleOf'],
    [{ type: 'string', format: 'ipv4' }, 'ipv4'],
    [{ allOf: [{ type: 'string' }] }, 'allOf'],
    [{ type: 'object', properties: { a: { not: {} } } }, 'not'],
  ] as const) {
    test(named, () => {
      const doc: OpenApiDocument = {
        openapi: '3.1.0',
        paths: { '/x': { post: { requestBody: { content: { 'application/json': { schema } } }, responses: {} } } },
      }
      assert.throws(() => listOperations(doc), (err: unknown) => err instanceof UnsupportedSchemaError && err.message.includes(named) && err.message.includes('POST /x'))
    })
  }

  test('media types and security schemes it cannot make', () => {
    const body = (type: string) => ({ requestBody: { content: { [type]: { schema: { type: 'string' } } } }, responses: {} })
    assert.throws(() => listOperations({ openapi: '3.1.0', paths: { '/x': { post: body('multipart/form-data') } } }), /multipart\/form-data/)
    const oauth: OpenApiDocument = {
      openapi: '3.1.0', paths: { '/x': { get: { security: [{ oauth: [] }], responses: {} } } },
      components: { securitySchemes: { oauth: { type: 'oauth2' } } },
    }
    assert.throws(() => listOperations(oauth), /oauth/)
  })
})

test('path, query and header parameters and API keys are generated, and the oracle reads them back', () => {
  const doc: OpenApiDocument = {
    openapi: '3.1.0',
    components: { securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'X-Api-Key' } } },
    paths: {
      '/items/{id}': {
        get: {
          security: [{ key: [] }],
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[a-z]{3}$' } },
            { name: 'limit', in: 'query', required: true, schema: { type: 'integer', minimum: 1, maximum: 50 } },
            { name: 'x-trace', in: 'header', schema: { type: 'string', pattern: '^[0-9]{4}$' } },
          ],
          responses: {},
        },
      },
    },
  }
  const [op] = listOperations(doc)
  assert.equal(op!.apiKeyHeader, 'x-api-key')
  for (const c of fc.sample(validCaseArbitrary(op!, { ...ctx, apiKey: 'k', camaraToken: 't' }), { numRuns: 100, seed: 2 })) {
    assert.match(c.request.url, /^\/items\/[a-z]{3}\?limit=\d+/)
    assert.equal(c.request.headers['x-api-key'], 'k')
    assert.equal(typeof parseQuery(c.request.url.split('?')[1]!).limit, 'string')
    const oracle = { ops: [op!], apiKey: 'k', camaraToken: 't', resolve: ctx.resolve }
    assert.deepEqual(classify(c, oracle), { kind: 'accept' }, c.request.url)
    assert.deepEqual(classify({ ...c, request: { ...c.request, headers: {} } }, oracle), { kind: 'reject', why: 'no valid API key', statuses: [401] })
    assert.equal(classify({ ...c, request: { ...c.request, url: c.request.url.replace(/limit=\d+/, 'limit=51') } }, oracle).kind, 'reject')
  }
})
