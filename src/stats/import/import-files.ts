import type { TSchema } from 'typebox'
import { Gateway, SessionInput, WifiNode } from '../../contract/stats-schemas.ts'

/**
 * The files `kns stats import` reads, by option, and the record each row or element must be:
 * the importer checks them against these schemas, and the CLI's help lists their columns from
 * them (describeImportColumns), so the two cannot disagree.
 */
export const IMPORT_FILES = { gateways: Gateway, 'wifi-nodes': WifiNode, usage: SessionInput } as const

interface FieldSchema { description?: string; const?: unknown; anyOf?: FieldSchema[] }

/** A field's one-line description: its own, else its alternatives' (`gateway | wifi`). */
function describeField(schema: FieldSchema): string {
  if (schema.description !== undefined) return schema.description
  if (schema.anyOf !== undefined) return schema.anyOf.map((member) => (member.const !== undefined ? String(member.const) : describeField(member))).join(' | ')
  return ''
}

/** `--<file>` then one line per column: its name and description, in the schema's order. */
export function describeImportColumns(indent = '  '): string {
  return Object.entries(IMPORT_FILES).map(([option, schema]: [string, TSchema]) => {
    const fields = Object.entries((schema as { properties: Record<string, FieldSchema> }).properties)
    const width = Math.max(...fields.map(([name]) => name.length))
    return [`${indent}--${option}:`, ...fields.map(([name, field]) => `${indent}  ${name.padEnd(width)}  ${describeField(field)}`)].join('\n')
  }).join('\n')
}
