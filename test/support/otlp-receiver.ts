/**
 * A local OTLP/HTTP trace receiver (a node:http server on loopback) for the tracing tests:
 * the server under test exports to it with OTEL_EXPORTER_OTLP_PROTOCOL=http/json (OTLP's JSON
 * encoding, which needs no protobuf decoder here), and it keeps every span it is sent, with its
 * resource's attributes, flattened.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** '' for a root span. */
  parentSpanId: string
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  attributes: Record<string, string | number | boolean>
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number
  resource: Record<string, string | number | boolean>
}

export interface OtlpReceiver {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for it (the exporter adds /v1/traces). */
  endpoint: string
  spans: ReceivedSpan[]
  /** Export requests received (any path). */
  requests: number
  close(): Promise<void>
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number }
type OtlpAttribute = { key: string; value: OtlpValue }

function flatten(attributes: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  for (const { key, value } of attributes ?? []) {
    out[key] = value.stringValue ?? value.boolValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.doubleValue ?? '')
  }
  return out
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver: OtlpReceiver = {
    endpoint: '', spans: [], requests: 0,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
  const server = createServer((req, res) => {
    void req.toArray().then((chunks: Buffer[]) => {
      receiver.requests++
      if (req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end()
        return
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans?: Array<{ resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }>
      }
      for (const resourceSpans of body.resourceSpans ?? []) {
        const resource = flatten(resourceSpans.resource?.attributes)
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            receiver.spans.push({
              traceId: String(span.traceId), spanId: String(span.spanId), parentSpanId: String(span.parentSpanId ?? ''),
              name: String(span.name), kind: Number(span.kind), attributes: flatten(span.attributes as OtlpAttribute[]),
              status: Number((span.status as { code?: number } | undefined)?.code ?? 0), resource,
            })
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return receiver
}
