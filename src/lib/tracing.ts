/**
 * OpenTelemetry traces (docs/operations.md, Traces). Off unless OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set: then `startTracing()` loads the official Node SDK,
 * which reads every other OTEL_* variable itself (service name, protocol, sampler, resource
 * attributes, batch delays, propagators). Off, nothing of OpenTelemetry is even imported (the
 * API and the SDK are loaded dynamically, types only here), and every helper below runs its
 * function directly: a hot path (a database statement) asks `tracingOn()` first and keeps its
 * untraced path as it was.
 *
 * What a span may carry: names from a fixed vocabulary, route and statement templates, hosts,
 * status codes and error codes. Never a secret, a query string, a phone number, a parameter
 * value or a body; an error is recorded by its code (`error.type`), never by its message.
 */
import { readFileSync } from 'node:fs'
import type { EventEmitter } from 'node:events'
import type * as Api from '@opentelemetry/api'

type OtelApi = typeof import('@opentelemetry/api')
export type SpanKindName = 'internal' | 'server' | 'client'
export type SpanAttributes = Record<string, string | number | boolean | undefined>

/** The part of a span the service's code uses (a no-op one when tracing is off). */
export interface TraceSpan {
  setAttribute(key: string, value: string | number | boolean): TraceSpan
  setAttributes(attributes: Record<string, string | number | boolean>): TraceSpan
  updateName(name: string): TraceSpan
}

export interface SpanOptions {
  kind?: SpanKindName
  attributes?: SpanAttributes
  /**
   * Only as the child of a span already active and recording: a database statement or a Redis
   * command of the background work (a poll every second) is not worth a trace of its own.
   */
  childOnly?: boolean
  /** A stored W3C traceparent to continue (a webhook delivery continues its decision's trace). */
  traceparent?: string | null
}

const NOOP_SPAN: TraceSpan = { setAttribute: () => NOOP_SPAN, setAttributes: () => NOOP_SPAN, updateName: () => NOOP_SPAN }


let api: OtelApi | undefined
let sdk: { shutdown(): Promise<void> } | undefined
let tracer: Api.Tracer | undefined

/** Whether traces are to be exported: an OTLP endpoint is set and the SDK is not disabled. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false
  return (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim() !== '' || (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '').trim() !== ''
}

/** The cheap check of the hot paths: true once the SDK runs in this process. */
export const tracingOn = (): boolean => tracer !== undefined

function serviceVersion(): string | undefined {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version
  } catch {
    return undefined
  }
}

/**
 * Starts the SDK in this process when tracing is configured (each `kns serve --workers`
 * process starts its own: a worker runs the same start as a single server). Traces only: the
 * metrics stay Prometheus's and the logs pino's. `service.name` defaults to `kns`
 * (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win). Returns whether tracing is on.
 */
export async function startTracing(): Promise<boolean> {
  if (tracer !== undefined) return true
  if (!tracingConfigured()) return false
  const [otel, node, resources] = await Promise.all([
    import('@opentelemetry/api'), import('@opentelemetry/sdk-node'), import('@opentelemetry/resources'),
  ])
  const version = serviceVersion()
  sdk = node.startNodeSdk({
    // The SDK's own diagnostics (export failures) on stderr; `info` would add start-up chatter.
    logLevel: process.env.OTEL_LOG_LEVEL ?? 'warn',
    metricReaders: [],
    logRecordProcessors: [],
    baseResource: resources.defaultResource().merge(resources.resourceFromAttributes({
      'service.name': 'kns', ...(version === undefined ? {} : { 'service.version': version }),
    })),
  })
  api = otel
  tracer = otel.trace.getTracer('kns', version)
  return true
}

/** Exports what is still buffered and stops (at shutdown). */
export async function stopTracing(): Promise<void> {
  const running = sdk
  sdk = undefined
  tracer = undefined
  await running?.shutdown().catch(() => {})
}

/** An error as a span may name it: its stable code, else its class name; never its message. */
export function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code
  return err instanceof Error ? err.name : typeof err
}

function parentContext(a: OtelApi, options: SpanOptions): Api.Context | null {
  if (options.traceparent != null) {
    const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(options.traceparent)
    if (match !== null) {
      const remote = { traceId: match[1]!, spanId: match[2]!, traceFlags: parseInt(match[3]!, 16), isRemote: true }
      if (a.trace.isSpanContextValid(remote)) return a.trace.setSpanContext(a.ROOT_CONTEXT, remote)
    }
  }
  const active = a.context.active()
  // A child-only span under a parent that records nothing (not sampled) would be dropped with
  // it: not made at all, so a sampled-out request pays nothing per statement.
  if (options.childOnly === true && a.trace.getSpan(active)?.isRecording() !== true) return null
  return active
}

const KINDS: Record<SpanKindName, Api.SpanKind> = { internal: 0, server: 1, client: 2 }

function clean(attributes: SpanAttributes | undefined): Api.Attributes | undefined {
  if (attributes === undefined) return undefined
  const out: Api.Attributes = {}
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value
  return out
}

/**
 * Runs `fn` in a new span, active for everything it does, and ends the span when it settles
 * (a failure marks it ERROR with `error.type`). Without tracing, or with `childOnly` and no
 * active span, `fn` runs alone with a span that records nothing.
 */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: TraceSpan) => Promise<T> | T): Promise<T> {
  const a = api
  const t = tracer
  if (a === undefined || t === undefined) return fn(NOOP_SPAN)
  const parent = parentContext(a, options)
  if (parent === null) return fn(NOOP_SPAN)
  const span = t.startSpan(name, { kind: KINDS[options.kind ?? 'internal'], attributes: clean(options.attributes) }, parent)
  try {
    return await a.context.with(a.trace.setSpan(parent, span), () => fn(span))
  } catch (err) {
    span.setAttribute('error.type', errorType(err))
    span.setStatus({ code: a.SpanStatusCode.ERROR })
    throw err
  } finally {
    span.end()
  }
}

/** Marks the active span failed, by a code (an HTTP or SIP status, a delivery's outcome). */
export function markFailed(span: TraceSpan, type: string): void {
  const a = api
  if (a === undefined || span === NOOP_SPAN) return
  span.setAttribute('error.type', type)
  ;(span as Api.Span).setStatus({ code: a.SpanStatusCode.ERROR })
}

/** The active span (to name it or add an attribute once known), or one that records nothing. */
export function activeSpan(): TraceSpan {
  const a = api
  if (a === undefined) return NOOP_SPAN
  return a.trace.getActiveSpan() ?? NOOP_SPAN
}

/** The active span as a W3C traceparent (to store with work done later), or null. */
export function currentTraceparent(): string | null {
  const a = api
  if (a === undefined) return null
  const context = a.trace.getActiveSpan()?.spanContext()
  if (context === undefined || !a.trace.isSpanContextValid(context)) return null
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

/** `headers` with the active context's `traceparent` (and `tracestate`) added, for an outbound request. */
export function withTraceHeaders(headers: Record<string, string>): Record<string, string> {
  const a = api
  if (a === undefined) return headers
  const out = { ...headers }
  a.propagation.inject(a.context.active(), out)
  return out
}

/**
 * An incoming request's server span, its parent taken from the caller's `traceparent` and
 * `tracestate` (W3C, or what OTEL_PROPAGATORS names). `run` calls the request's handler in
 * the span's context, with the request and response emitters bound to it (their events come
 * from the socket, outside any context), and ends the span when the response closes.
 */
export function serverSpan(name: string, headers: Record<string, string | string[] | undefined>, attributes: SpanAttributes): {
  span: TraceSpan
  run(emitters: EventEmitter[], closed: EventEmitter, fn: () => void): void
} | null {
  const a = api
  const t = tracer
  if (a === undefined || t === undefined) return null
  const parent = a.propagation.extract(a.ROOT_CONTEXT, headers)
  const span = t.startSpan(name, { kind: KINDS.server, attributes: clean(attributes) }, parent)
  const context = a.trace.setSpan(parent, span)
  return {
    span,
    run(emitters, closed, fn) {
      for (const emitter of emitters) a.context.bind(context, emitter)
      closed.once('close', () => span.end())
      a.context.with(context, fn)
    },
  }
}

/**
 * pino options that put `trace_id` and `span_id` on every line written inside a span; none
 * (nothing added to the logger) when tracing is off.
 */
export function traceLogOptions(): { mixin?: () => Record<string, string> } {
  const a = api
  if (a === undefined) return {}
  return {
    mixin(): Record<string, string> {
      const context = a.trace.getActiveSpan()?.spanContext()
      if (context === undefined) return {}
      return { trace_id: context.traceId, span_id: context.spanId }
    },
  }
}
