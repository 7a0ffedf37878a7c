/**
 * A trace span per database statement (docs/operations.md, Traces), as the child of the span
 * that runs it (a request's, a delivery's): `db.system.name`, the operation and the table it
 * names first, never the statement's parameters. Without tracing the executor is returned as
 * it is, so the statements' path stays untouched.
 */
import { inSpan, tracingOn } from '../lib/tracing.ts'
import type { Executor } from './engine.ts'

interface Summary { name: string; operation: string; table: string | undefined }

const summaries = new Map<string, Summary>()
const OPERATION = /^\s*(?:\/\*[\s\S]*?\*\/\s*)?([A-Za-z]+)/
const TABLE = /\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+([A-Za-z_][A-Za-z0-9_.]*)/i

/** `SELECT approvals`: the statement's first keyword and first table (a template: no values). */
export function statementSummary(sql: string): Summary {
  let summary = summaries.get(sql)
  if (summary === undefined) {
    const operation = (OPERATION.exec(sql)?.[1] ?? 'SQL').toUpperCase()
    const table = TABLE.exec(sql)?.[1]
    summary = { name: table === undefined ? operation : `${operation} ${table}`, operation, table }
    // Bounded: the service runs a fixed set of statements.
    if (summaries.size < 5000) summaries.set(sql, summary)
  }
  return summary
}

export function withStatementSpans(executor: Executor, system: 'sqlite' | 'postgresql'): Executor {
  if (!tracingOn()) return executor
  const traced = <T>(sql: string, run: () => Promise<T>): Promise<T> => {
    const { name, operation, table } = statementSummary(sql)
    return inSpan(name, {
      kind: 'client', childOnly: true,
      attributes: { 'db.system.name': system, 'db.operation.name': operation, 'db.collection.name': table },
    }, run)
  }
  return {
    engine: executor.engine,
    all: (sql, params) => traced(sql, () => executor.all(sql, params)),
    get: (sql, params) => traced(sql, () => executor.get(sql, params)),
    run: (sql, params) => traced(sql, () => executor.run(sql, params)),
    ...(executor.copyFrom === undefined ? {} : { copyFrom: (sql: string, data: string) => traced(sql, () => executor.copyFrom!(sql, data)) }),
  }
}
