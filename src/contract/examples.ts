import type { Static, TObject, TSchema } from 'typebox'

/**
 * The schema keyword that carries examples: @fastify/swagger moves it to the `examples` of the
 * media type or parameter the schema describes. Both validators read it as an annotation only
 * (Fastify's Ajv is told so in src/http/app.ts): an example never changes what is accepted.
 */
export const EXAMPLES_KEYWORD = 'x-examples'

/** An OpenAPI Example Object. */
export interface Example<T> { summary: string; value: T }

/**
 * `schema` with an example of it, for an operation's request body or answer. The example is
 * typed by the schema; test/http/openapi-examples.test.ts also validates it, as Fastify would.
 */
export function exemplified<T extends TSchema>(schema: T, example: Example<Static<T>>): T {
  return { ...schema, [EXAMPLES_KEYWORD]: { example } }
}

/** An exemplified `schema` with one more named example: a body that takes distinct shapes (a login or a CAMARA client). */
export function alsoExemplified<T extends TSchema>(schema: T, name: string, example: Example<Static<T>>): T {
  const given = (schema as Record<string, unknown>)[EXAMPLES_KEYWORD] as Record<string, Example<Static<T>>> | undefined
  return { ...schema, [EXAMPLES_KEYWORD]: { ...given, [name]: example } }
}

/** A querystring or path schema with an example value for each parameter named in `values`. */
export function exemplifiedParams<T extends TObject>(schema: T, values: Partial<Static<T>>): T {
  const given = values as Record<string, unknown>
  const properties = Object.fromEntries(Object.entries(schema.properties).map(([name, property]) => [
    name, name in given ? { ...property, [EXAMPLES_KEYWORD]: { example: { summary: name, value: given[name] } } } : property,
  ]))
  return { ...schema, properties }
}
