import { Type, type TEnum, type TSchemaOptions } from 'typebox'

/**
 * A string that is one of `values`, as `{ type: 'string', enum: [...] }`: the OpenAPI document
 * then lists the allowed values (a union of literals reads `string | string` to its readers and
 * to code generators). Both validators (Fastify's Ajv, TypeBox's Compile) accept exactly the
 * same values as that union; a value outside the list is answered "must be one of ...".
 */
export function StringEnum<const T extends string[]>(values: readonly [...T], options: TSchemaOptions = {}): TEnum<T> {
  return Type.Enum(values, { ...options, type: 'string' })
}
