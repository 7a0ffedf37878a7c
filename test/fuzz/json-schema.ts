/**
 * JSON Schema (the subset the served OpenAPI 3.1 document uses) -> fast-check arbitraries,
 * and the matching validator `conformance`, which decides whether a mutated request is still
 * one the schema accepts. Both understand exactly the same keywords: anything else throws
 * UnsupportedSchemaError naming it, so a route whose schema grows a new feature fails the
 * fuzz suite loudly instead of being fuzzed wrongly or skipped.
 */
import fc from 'fast-check'

export type JsonSchema = { readonly [keyword: string]: unknown }

export class UnsupportedSchemaError extends Error {}

/** Keywords that say nothing about validity. */
const ANNOTATIONS = new Set(['description', 'title', 'examples', 'example', 'default', '$id', '$schema', '$comment', 'deprecated', 'readOnly', 'writeOnly'])
const VALIDATION = new Set(['type', 'pattern', 'minLength', 'maxLength', 'format', 'minimum', 'maximum', 'exclusiveMinimum',
  'exclusiveMaximum', 'enum', 'const', 'anyOf', 'oneOf', 'items', 'minItems', 'maxItems', 'properties', 'required',
  'additionalProperties', '$ref'])
const TYPES = new Set(['string', 'integer', 'number', 'boolean', 'object', 'array', 'null'])
const FORMATS = new Set(['date-time', 'date', 'uuid'])

/** Correlated field values from the fixtures, e.g. `{ approvalNumber, signature }` of one approval. */
export type FixtureRecord = Readonly<Record<string, unknown>>

export interface SchemaContext {
  /** `#/components/schemas/X` -> schema. */
  resolve(ref: string): JsonSchema
  /** Known-good values, overlaid on generated objects by property name (when they fit the property). */
  records: readonly FixtureRecord[]
}

/** Patterns compile once: conformance runs on every generated and mutated value. */
const compiled = new Map<string, RegExp>()
function regex(pattern: string): RegExp {
  let re = compiled.get(pattern)
  if (re === undefined) compiled.set(pattern, re = new RegExp(pattern, 'u'))
  return re
}

const isSchema = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v)
const codePoints = (s: string) => [...s].length

/** Throws on any keyword, type or format this module cannot generate and check. */
export function assertSupported(schema: unknown, ctx: SchemaContext, where: string, seen = new Set<unknown>()): void {
  if (schema === true || (isSchema(schema) && Object.keys(schema).length === 0)) return
  if (!isSchema(schema)) throw new UnsupportedSchemaError(`${where}: schema is not an object: ${JSON.stringify(schema)}`)
  if (seen.has(schema)) return
  seen.add(schema)
  for (const [keyword, value] of Object.entries(schema)) {
    if (ANNOTATIONS.has(keyword)) continue
    if (!VALIDATION.has(keyword)) throw new UnsupportedSchemaError(`${where}: unsupported JSON Schema keyword "${keyword}"`)
    if (keyword === 'type') {
      for (const t of [value].flat()) if (!TYPES.has(t as string)) throw new UnsupportedSchemaError(`${where}: unsupported type ${JSON.stringify(t)}`)
    }
    if (keyword === 'format' && !FORMATS.has(value as string)) throw new UnsupportedSchemaError(`${where}: unsupported format "${String(value)}"`)
    if (keyword === 'pattern') {
      try { new RegExp(value as string, 'u') } catch (err) { throw new UnsupportedSchemaError(`${where}: pattern does not compile: ${(err as Error).message}`) }
    }
  }
  if (typeof schema.$ref === 'string') assertSupported(ctx.resolve(schema.$ref), ctx, `${where}/$ref(${schema.$ref})`, seen)
  for (const k of ['anyOf', 'oneOf'] as const) {
    const branches = schema[k]
    if (branches !== undefined && !Array.isArray(branches)) throw new UnsupportedSchemaError(`${where}/${k}: not an array`)
    ;(branches as unknown[] | undefined)?.forEach((b, i) => assertSupported(b, ctx, `${where}/${k}/${i}`, seen))
  }
  if (schema.items !== undefined) assertSupported(schema.items, ctx, `${where}/items`, seen)
  if (isSchema(schema.additionalProperties)) assertSupported(schema.additionalProperties, ctx, `${where}/additionalProperties`, seen)
  for (const [name, p] of Object.entries((schema.properties ?? {}) as Record<string, unknown>)) assertSupported(p, ctx, `${where}/properties/${name}`, seen)
}

// ---------------------------------------------------------------- validation

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):?(\d{2}))$/
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const UUID = /^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i

function validDate(y: number, m: number, d: number): boolean {
  const days = [31, y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
  return m >= 1 && m <= 12 && d >= 1 && d <= days[m - 1]!
}

/** As ajv-formats checks them (a zone is required; leap seconds are not worth modelling). */
function formatHolds(format: string, s: string): boolean {
  if (format === 'uuid') return UUID.test(s)
  const m = (format === 'date' ? DATE : DATE_TIME).exec(s)
  if (m === null || !validDate(Number(m[1]), Number(m[2]), Number(m[3]))) return false
  if (format === 'date') return true
  return Number(m[4]) <= 23 && Number(m[5]) <= 59 && Number(m[6]) <= 59 && (m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59))
}

function typeOf(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  return typeof v
}

function hasType(t: string, v: unknown): boolean {
  if (t === 'integer') return typeof v === 'number' && Number.isInteger(v)
  if (t === 'number') return typeof v === 'number' && Number.isFinite(v)
  return typeOf(v) === t
}

/** null when `value` is valid against `schema`, else the first reason it is not (with its JSON pointer). */
export function conformance(schema: unknown, value: unknown, ctx: Pick<SchemaContext, 'resolve'>, at = ''): string | null {
  if (schema === true || !isSchema(schema)) return null
  const s = schema
  const fail = (why: string) => `${at || '/'}: ${why}`
  if (typeof s.$ref === 'string') {
    const inner = conformance(ctx.resolve(s.$ref), value, ctx, at)
    if (inner !== null) return inner
  }
  if (s.type !== undefined && ![s.type].flat().some((t) => hasType(t as string, value))) return fail(`not of type ${JSON.stringify(s.type)}`)
  if (s.const !== undefined && JSON.stringify(s.const) !== JSON.stringify(value)) return fail('not the const value')
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) return fail('not one of the enum values')
  for (const k of ['anyOf', 'oneOf'] as const) {
    const branches = s[k] as unknown[] | undefined
    if (branches === undefined) continue
    const passing = branches.filter((b) => conformance(b, value, ctx, at) === null).length
    if (passing === 0 || (k === 'oneOf' && passing > 1)) return fail(`${passing} branches of ${k} match`)
  }
  if (typeof value === 'string') {
    const n = codePoints(value)
    if (typeof s.minLength === 'number' && n < s.minLength) return fail(`shorter than ${s.minLength}`)
    if (typeof s.maxLength === 'number' && n > s.maxLength) return fail(`longer than ${s.maxLength}`)
    if (typeof s.pattern === 'string' && !regex(s.pattern).test(value)) return fail(`does not match ${s.pattern}`)
    if (typeof s.format === 'string' && !formatHolds(s.format, value)) return fail(`not a ${s.format}`)
  }
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) return fail(`below ${s.minimum}`)
    if (typeof s.maximum === 'number' && value > s.maximum) return fail(`above ${s.maximum}`)
    if (typeof s.exclusiveMinimum === 'number' && value <= s.exclusiveMinimum) return fail(`not above ${s.exclusiveMinimum}`)
    if (typeof s.exclusiveMaximum === 'number' && value >= s.exclusiveMaximum) return fail(`not below ${s.exclusiveMaximum}`)
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === 'number' && value.length < s.minItems) return fail(`fewer than ${s.minItems} items`)
    if (typeof s.maxItems === 'number' && value.length > s.maxItems) return fail(`more than ${s.maxItems} items`)
    if (s.items !== undefined) {
      for (let i = 0; i < value.length; i++) {
        const inner = conformance(s.items, value[i], ctx, `${at}/${i}`)
        if (inner !== null) return inner
      }
    }
  }
  if (typeOf(value) === 'object') {
    const obj = value as Record<string, unknown>
    const props = (s.properties ?? {}) as Record<string, unknown>
    for (const name of (s.required ?? []) as string[]) if (!Object.hasOwn(obj, name)) return fail(`${name} is required`)
    for (const [name, v] of Object.entries(obj)) {
      const inner = Object.hasOwn(props, name) ? conformance(props[name], v, ctx, `${at}/${name}`)
        : s.additionalProperties === false ? fail(`${name} is not allowed`)
        : conformance(s.additionalProperties ?? true, v, ctx, `${at}/${name}`)
      if (inner !== null) return inner
    }
  }
  return null
}

// ---------------------------------------------------------------- generation

/**
 * Characters the services must survive wherever a schema lets them through: NUL and other C0
 * and C1 controls, lone surrogates, bidi overrides, line/paragraph separators, BOM, noncharacters.
 */
export const HOSTILE_CHARS = ['\u0000', '\u0001', '\u0008', '\t', '\n', '\r', '\u001b', '\u001f', '\u007f', '\u0080', '\u0085', '\u009f',
  '\ud800', '\udbff', '\udc00', '\udfff', '\u202e', '\u202d', '\u2066', '\u2028', '\u2029', '\ufeff', '\ufffe', '\uffff', '\u{1f600}', 'é', '"', '\\']

/** One character per unit: mostly ordinary (any plane), sometimes hostile. */
const CHAR_UNIT = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_CHARS) },
)

const DAY_MS = 86_400_000
const ZONES = ['Z', '+00:00', '+05:30', '-08:00', '+14:00', '-12:00', 'z']

/** `d` as ISO 8601 in the zone `zone` (same instant), with or without fractions. */
export function isoInZone(d: Date, zone: string, millis: boolean): string {
  const m = /^([+-])(\d\d):(\d\d)$/.exec(zone)
  const offsetMs = m === null ? 0 : (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * 60_000
  const local = new Date(d.getTime() + offsetMs).toISOString()
  return `${millis ? local.slice(0, 23) : local.slice(0, 19)}${zone}`
}

function dateTimeArbitrary(): fc.Arbitrary<string> {
  // Mostly the recent past, where data lives; up to a day ahead (clocks drift, "future" checks).
  const instant = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.now() + DAY_MS }).map((ms) => new Date(ms))
  return fc.tuple(instant, fc.constantFrom(...ZONES), fc.boolean()).map(([d, zone, millis]) => isoInZone(d, zone, millis))
}

function formatArbitrary(format: string): fc.Arbitrary<string> {
  if (format === 'date-time') return dateTimeArbitrary()
  if (format === 'date') return dateTimeArbitrary().map((s) => s.slice(0, 10))
  return fc.uuid()
}

/**
 * A string matching `re`, sometimes with hostile characters inserted where the pattern still
 * allows them: fc.stringMatching draws negated classes from printable ASCII only, and the
 * interesting inputs are exactly the ones a permissive pattern lets through.
 */
function patternArbitrary(re: RegExp): fc.Arbitrary<string> {
  const edits = fc.array(fc.tuple(fc.nat(), fc.constantFrom(...HOSTILE_CHARS), fc.boolean()), { minLength: 1, maxLength: 3 })
  const sprinkled = fc.tuple(fc.stringMatching(re), edits).map(([s, list]) => {
    let out = s
    for (const [pos, ch, replace] of list) {
      const chars = [...out]
      const i = chars.length === 0 ? 0 : pos % chars.length
      chars.splice(i, replace ? 1 : 0, ch)
      const candidate = chars.join('')
      if (re.test(candidate)) out = candidate
    }
    return out
  })
  return fc.oneof({ weight: 3, arbitrary: fc.stringMatching(re) }, { weight: 1, arbitrary: sprinkled })
}

function stringArbitrary(s: JsonSchema, where: string): fc.Arbitrary<string> {
  const min = typeof s.minLength === 'number' ? s.minLength : 0
  const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity
  const fits = (v: string) => codePoints(v) >= min && codePoints(v) <= max
  let base: fc.Arbitrary<string>
  if (typeof s.pattern === 'string') base = patternArbitrary(regex(s.pattern))
  else if (typeof s.format === 'string') base = formatArbitrary(s.format)
  else {
    const small = fc.string({ unit: CHAR_UNIT, minLength: min, maxLength: Math.min(max, min + 24) })
    if (!Number.isFinite(max)) return small
    // The longest allowed value, sometimes: limits are where off-by-one errors live. (A short
    // string repeated: drawing 16 384 characters one by one would dominate the run.)
    const longest = small.map((v) => {
      const chars = [...(v === '' ? 'a' : v)]
      return Array.from({ length: max }, (_, i) => chars[i % chars.length]).join('')
    })
    return fc.oneof({ weight: 9, arbitrary: small }, { weight: 1, arbitrary: longest })
  }
  const sample = fc.sample(base, { numRuns: 100, seed: 42 })
  if (sample.filter(fits).length < 10) {
    throw new UnsupportedSchemaError(`${where}: cannot generate strings of length ${min}..${max} for pattern/format ${String(s.pattern ?? s.format)}`)
  }
  return base.filter(fits)
}

function integerRange(s: JsonSchema): { min: number; max: number } {
  let min = typeof s.minimum === 'number' ? Math.ceil(s.minimum) : -Number.MAX_SAFE_INTEGER
  let max = typeof s.maximum === 'number' ? Math.floor(s.maximum) : Number.MAX_SAFE_INTEGER
  if (typeof s.exclusiveMinimum === 'number') min = Math.max(min, Math.floor(s.exclusiveMinimum) + 1)
  if (typeof s.exclusiveMaximum === 'number') max = Math.min(max, Math.ceil(s.exclusiveMaximum) - 1)
  return { min, max }
}

function integerArbitrary(s: JsonSchema, where: string): fc.Arbitrary<number> {
  const { min, max } = integerRange(s)
  if (min > max) throw new UnsupportedSchemaError(`${where}: no integer lies within the bounds`)
  const int32 = 2 ** 31 - 1
  if (min >= -int32 && max <= int32) return fc.integer({ min, max })
  // fc.integer stops at 32 bits; the bounds and the far end matter most for 53-bit ones.
  const options: fc.Arbitrary<number>[] = [fc.bigInt(BigInt(min), BigInt(max)).map(Number), fc.constantFrom(min, max)]
  const low = Math.max(min, -1000)
  if (low <= int32) options.push(fc.integer({ min: low, max: Math.min(max, low + 100_000, int32) }))
  // Without a bound, JSON Schema integers go on forever: past 2^53, past 64 bits, to 1e308.
  if (typeof s.maximum !== 'number' && typeof s.exclusiveMaximum !== 'number') options.push(fc.constantFrom(2 ** 53 + 2, 2 ** 63, 2 ** 64, 1e19, 1e308))
  if (typeof s.minimum !== 'number' && typeof s.exclusiveMinimum !== 'number') options.push(fc.constantFrom(-(2 ** 53) - 2, -(2 ** 63), -1e308))
  return fc.oneof(...options)
}

function numberArbitrary(s: JsonSchema, where: string): fc.Arbitrary<number> {
  const c: fc.DoubleConstraints = { noNaN: true, noDefaultInfinity: true }
  if (typeof s.minimum === 'number') c.min = s.minimum
  if (typeof s.maximum === 'number') c.max = s.maximum
  if (typeof s.exclusiveMinimum === 'number') { c.min = s.exclusiveMinimum; c.minExcluded = true }
  if (typeof s.exclusiveMaximum === 'number') { c.max = s.exclusiveMaximum; c.maxExcluded = true }
  // Whole numbers too, where there are any: a JSON number need not have a fraction.
  const { min, max } = integerRange(s)
  return min > max ? fc.double(c) : fc.oneof({ weight: 4, arbitrary: fc.double(c) }, { weight: 1, arbitrary: integerArbitrary(s, where) })
}

function objectArbitrary(s: JsonSchema, ctx: SchemaContext, where: string): fc.Arbitrary<Record<string, unknown>> {
  const props = (s.properties ?? {}) as Record<string, JsonSchema>
  const required = ((s.required ?? []) as string[]).filter((r) => Object.hasOwn(props, r))
  const missing = ((s.required ?? []) as string[]).filter((r) => !Object.hasOwn(props, r))
  if (missing.length > 0) throw new UnsupportedSchemaError(`${where}: required ${missing.join(', ')} without a schema in properties`)
  const fields: Record<string, fc.Arbitrary<unknown>> = {}
  for (const [name, p] of Object.entries(props)) fields[name] = arbitraryFor(p, ctx, `${where}/properties/${name}`)
  const plain = fc.record(fields, { requiredKeys: required }) as fc.Arbitrary<Record<string, unknown>>
  const options: fc.WeightedArbitrary<Record<string, unknown>>[] = [{ weight: 4, arbitrary: plain }]
  // The fixtures' fields that fit this object: a registered number, an existing approval...
  const overlays = ctx.records
    .map((r) => Object.fromEntries(Object.entries(r).filter(([k, v]) => Object.hasOwn(props, k) && conformance(props[k], v, ctx) === null)))
    .filter((r) => Object.keys(r).length > 0)
  if (overlays.length > 0) {
    options.push({ weight: 4, arbitrary: fc.tuple(plain, fc.constantFrom(...overlays)).map(([o, r]) => ({ ...o, ...r })) })
  }
  if (s.additionalProperties === undefined) {
    // Unknown fields are allowed by the schema (and documented as ignored): send some.
    options.push({ weight: 1, arbitrary: fc.tuple(plain, fc.jsonValue({ maxDepth: 1 })).map(([o, extra]) => ({ ...o, fuzzExtra: extra })) })
  }
  return fc.oneof(...options)
}

/** Values valid against `schema` (asserted on a sample: a generator that disagrees with the validator is a bug here). */
export function arbitraryFor(schema: unknown, ctx: SchemaContext, where: string): fc.Arbitrary<unknown> {
  if (schema === true || (isSchema(schema) && Object.keys(schema).filter((k) => !ANNOTATIONS.has(k)).length === 0)) return fc.jsonValue({ maxDepth: 2 })
  if (!isSchema(schema)) throw new UnsupportedSchemaError(`${where}: schema is not an object`)
  const s = schema
  if (typeof s.$ref === 'string') {
    const rest = Object.keys(s).filter((k) => k !== '$ref' && !ANNOTATIONS.has(k))
    if (rest.length > 0) throw new UnsupportedSchemaError(`${where}: $ref next to ${rest.join(', ')}`)
    return arbitraryFor(ctx.resolve(s.$ref), ctx, `${where}/$ref(${s.$ref})`)
  }
  if (s.const !== undefined) return fc.constant(s.const)
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum)
  for (const k of ['anyOf', 'oneOf'] as const) {
    const branches = s[k] as unknown[] | undefined
    if (branches === undefined) continue
    const { [k]: _dropped, ...outer } = s
    const arbs = branches.map((b, i) => arbitraryFor(isSchema(b) ? { ...outer, ...b } : b, ctx, `${where}/${k}/${i}`))
    return fc.oneof(...arbs).filter((v) => conformance(s, v, ctx) === null)
  }
  const types = [s.type ?? inferType(s, where)].flat() as string[]
  if (types.length > 1) return fc.oneof(...types.map((t) => arbitraryFor({ ...s, type: t }, ctx, where)))
  switch (types[0]) {
    case 'string': return stringArbitrary(s, where)
    case 'integer': return integerArbitrary(s, where)
    case 'number': return numberArbitrary(s, where)
    case 'boolean': return fc.boolean()
    case 'null': return fc.constant(null)
    case 'array': {
      const min = typeof s.minItems === 'number' ? s.minItems : 0
      // Small arrays: a batch of three exercises batching; ten thousand only slows the run.
      const max = Math.min(typeof s.maxItems === 'number' ? s.maxItems : Infinity, min + 3)
      return fc.array(arbitraryFor(s.items ?? true, ctx, `${where}/items`), { minLength: min, maxLength: max })
    }
    case 'object': return objectArbitrary(s, ctx, where)
    default: throw new UnsupportedSchemaError(`${where}: unsupported type ${String(types[0])}`)
  }
}

function inferType(s: JsonSchema, where: string): string {
  if (s.properties !== undefined || s.required !== undefined) return 'object'
  if (s.items !== undefined) return 'array'
  throw new UnsupportedSchemaError(`${where}: cannot tell the type of ${JSON.stringify(s)}`)
}
