/**
 * The Sui GraphQL schema that ships with the installed `@mysten/sui` (the schema its own typed
 * queries are generated from), made executable for the test stub: scalars that reject what the
 * real service rejects, and page limits on every paginated field (`first` / `last` above the
 * service's maximum is an error, as `sui-indexer-alt-graphql`'s pagination answers it).
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  buildSchema, GraphQLError, GraphQLObjectType, GraphQLScalarType, Kind, parse, validate,
  type DocumentNode, type GraphQLFieldResolver, type GraphQLSchema, type ValueNode,
} from 'graphql'
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'

/** The error codes `sui-indexer-alt-graphql` puts in `extensions.code` (src/error.rs). */
export const SUI_ERROR = {
  BAD_USER_INPUT: 'BAD_USER_INPUT',
  GRAPHQL_PARSE_FAILED: 'GRAPHQL_PARSE_FAILED',
  GRAPHQL_VALIDATION_FAILED: 'GRAPHQL_VALIDATION_FAILED',
  INTERNAL_SERVER_ERROR: 'INTERNAL_SERVER_ERROR',
  REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
} as const

export function suiError(message: string, code: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } })
}

/** The schema file inside the installed SDK (found from its entry point, not a hard-coded path). */
export function sdkSchemaPath(): string {
  const entry = fileURLToPath(import.meta.resolve('@mysten/sui/graphql'))
  return join(dirname(entry), '..', '..', 'src', 'graphql', 'generated', 'schema.graphql')
}

let cachedSchema: GraphQLSchema | undefined

/** The SDK's schema, parsed (shared: it is only read). */
export function sdkSchema(): GraphQLSchema {
  cachedSchema ??= buildSchema(readFileSync(sdkSchemaPath(), 'utf8'))
  return cachedSchema
}

/** Parse and validate a query against the SDK's schema: the errors the real service would give before running it. */
export function checkQuery(schema: GraphQLSchema, query: string): { document: DocumentNode } | { errors: GraphQLError[] } {
  let document: DocumentNode
  try {
    document = parse(query)
  } catch (err) {
    const error = err as GraphQLError
    return { errors: [new GraphQLError(error.message, { extensions: { code: SUI_ERROR.GRAPHQL_PARSE_FAILED } })] }
  }
  const errors = validate(schema, document)
  if (errors.length > 0) {
    return { errors: errors.map((e) => new GraphQLError(e.message, { nodes: e.nodes ?? [], extensions: { code: SUI_ERROR.GRAPHQL_VALIDATION_FAILED } })) }
  }
  return { document }
}

function literal(node: ValueNode): unknown {
  return node.kind === Kind.STRING || node.kind === Kind.INT ? node.value : undefined
}

function scalar(schema: GraphQLSchema, name: string, coerce: (value: unknown) => unknown): void {
  const type = schema.getType(name)
  if (!(type instanceof GraphQLScalarType)) throw new Error(`the SDK schema has no scalar ${name}`)
  const input = (value: unknown) => coerce(value)
  Object.assign(type, {
    parseValue: input,
    coerceInputValue: input,
    parseLiteral: (node: ValueNode) => coerce(literal(node)),
    coerceInputLiteral: undefined,
  })
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * A fresh executable copy of the SDK schema: input scalars checked like the real service's
 * (an address must be 0x + hex, Base64 must be padded standard Base64, UInt53 a safe
 * non-negative integer; refused while reading the variables, before any field runs, so
 * without the BAD_USER_INPUT a field's own verdict carries), and
 * every paginated field's `first` / `last` bounded by `maxPageSize()`.
 */
export function executableSchema(maxPageSize: () => number): GraphQLSchema {
  const schema = buildSchema(readFileSync(sdkSchemaPath(), 'utf8'))
  scalar(schema, 'SuiAddress', (value) => {
    if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{1,64}$/.test(value) || !isValidSuiAddress(normalizeSuiAddress(value))) {
      throw new GraphQLError(`Invalid SuiAddress: ${String(value).slice(0, 80)}`)
    }
    return normalizeSuiAddress(value)
  })
  scalar(schema, 'Base64', (value) => {
    if (typeof value !== 'string' || !BASE64.test(value)) throw new GraphQLError('Invalid Base64')
    return value
  })
  scalar(schema, 'UInt53', (value) => {
    const n = typeof value === 'string' ? Number(value) : value
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new GraphQLError('Invalid UInt53')
    return n
  })
  for (const type of Object.values(schema.getTypeMap())) {
    if (!(type instanceof GraphQLObjectType) || type.name.startsWith('__')) continue
    for (const field of Object.values(type.getFields())) {
      if (!field.args.some((arg) => arg.name === 'first')) continue
      const inner: GraphQLFieldResolver<unknown, unknown> | undefined = field.resolve
      field.resolve = (source, args: { first?: number | null; last?: number | null }, context, info) => {
        if (args.first != null && args.last != null) {
          throw suiError("Cannot provide both 'first' and 'last' parameters for connection", SUI_ERROR.BAD_USER_INPUT)
        }
        const limit = args.first ?? args.last
        const max = maxPageSize()
        if (limit != null && limit > max) throw suiError(`Page size of ${limit} exceeds max of ${max} for connection`, SUI_ERROR.BAD_USER_INPUT)
        if (inner !== undefined) return inner(source, args, context, info)
        const value = (source as Record<string, unknown>)[info.fieldName]
        return typeof value === 'function' ? (value as (a: unknown) => unknown)(args) : value
      }
    }
  }
  return schema
}
