/**
 * Tracing off (no OTLP endpoint), in process: every helper of src/lib/tracing.ts runs its
 * function alone and adds nothing (no header, no stored traceparent, no logger option), and the
 * database and ledger are handed back as they are. The processes with tracing on are
 * test/lib/tracing.test.ts.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { statementSummary, withStatementSpans } from '../../src/db/statement-spans.ts'
import type { Executor } from '../../src/db/engine.ts'
import { withLedgerSpans } from '../../src/ledger/ledger-spans.ts'
import type { Ledger } from '../../src/ledger/ledger.ts'
import {
  activeSpan, currentTraceparent, errorType, inSpan, startTracing, traceLogOptions, tracingConfigured, tracingOn, withTraceHeaders,
} from '../../src/lib/tracing.ts'

test('on only with an OTLP endpoint (general or for traces), and never with OTEL_SDK_DISABLED=true', () => {
  assert.equal(tracingConfigured({}), false)
  assert.equal(tracingConfigured({ OTEL_SERVICE_NAME: 'kns', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_TRACES_EXPORTER: 'otlp' }), false)
  assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }), false)
  assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true)
  assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true)
  assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' }), false)
})

test('off: the helpers run their function alone and add nothing', async () => {
  assert.equal(process.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, undefined, 'run without an endpoint')
  assert.equal(await startTracing(), false)
  assert.equal(tracingOn(), false)
  assert.equal(await inSpan('x', { kind: 'client' }, async (span) => { span.setAttribute('a', 1); return 42 }), 42)
  await assert.rejects(inSpan('x', {}, async () => { throw new Error('boom') }), /boom/)
  const headers = { accept: 'text/plain' }
  assert.equal(withTraceHeaders(headers), headers, 'the same headers, no traceparent')
  assert.equal(currentTraceparent(), null)
  assert.deepEqual(traceLogOptions(), {}, 'no pino mixin')
  assert.equal(activeSpan().updateName('y').setAttribute('z', 1), activeSpan(), 'a span that records nothing')
})

test('off: the database executor and the ledger are returned as they are', () => {
  const executor = { engine: 'sqlite' } as Executor
  assert.equal(withStatementSpans(executor, 'sqlite'), executor)
  const ledger = { kind: 'local' } as Ledger
  assert.equal(withLedgerSpans(ledger), ledger)
})

test('a statement is named by its operation and first table, never its values', () => {
  assert.deepEqual(statementSummary('SELECT a FROM approvals WHERE ref = $1'), { name: 'SELECT approvals', operation: 'SELECT', table: 'approvals' })
  assert.equal(statementSummary(`INSERT INTO webhook_deliveries (event_id) SELECT $1 FROM webhook_subscriptions`).name, 'INSERT webhook_deliveries')
  assert.equal(statementSummary('  update numbers SET x = 1').name, 'UPDATE numbers')
  assert.equal(statementSummary('BEGIN').name, 'BEGIN')
  assert.equal(statementSummary(`WITH t AS (SELECT 1) DELETE FROM sessions WHERE id IN (SELECT * FROM t)`).name, 'WITH sessions')
})

test('an error is named by its stable code or its class, never its message', () => {
  assert.equal(errorType(Object.assign(new Error('duplicate key (phone)=(+14155550100)'), { code: '23505' })), '23505')
  assert.equal(errorType(Object.assign(new Error('x'), { code: 'DATABASE_UNAVAILABLE' })), 'DATABASE_UNAVAILABLE')
  assert.equal(errorType(new TypeError('secret in here')), 'TypeError')
  assert.equal(errorType(Object.assign(new Error('x'), { code: 'has spaces: +1415' })), 'Error')
})
