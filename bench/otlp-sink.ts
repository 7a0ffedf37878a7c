/**
 * A local OTLP/HTTP trace sink for bench/tracing.bench.ts: it answers 200 to every
 * `POST /v1/traces` in OTLP's default protobuf encoding, keeps nothing, and counts the export
 * requests and the spans in them. Its own process, forked by the benchmark: in the benchmark's
 * process its work (the traced servers' exports) would share the event loop with autocannon and
 * slow the load generator in the traced slices only; here it weighs on the machine alike in every
 * slice, as a collector on the same host would. Reports `{ port }` over IPC; the message `counts`
 * answers `{ requests, spans, bytes, refused }`; `stop` exits.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

if (process.send === undefined) {
  console.error('bench/otlp-sink.ts is started by bench/tracing.bench.ts (it needs an IPC channel)')
  process.exit(2)
}

const counts = { requests: 0, spans: 0, bytes: 0, refused: 0 }

/** The length-delimited fields numbered `field` of the protobuf message in buf[start, end). */
function* embedded(buf: Buffer, start: number, end: number, field: number): Generator<[number, number]> {
  let at = start
  const varint = (): number => {
    let value = 0
    for (let shift = 0; ; shift += 7) {
      const byte = buf[at++]!
      value += (byte & 0x7f) * 2 ** shift
      if (byte < 0x80) return value
    }
  }
  while (at < end) {
    const tag = varint()
    const wire = tag & 7
    if (wire === 0) varint()
    else if (wire === 1) at += 8
    else if (wire === 5) at += 4
    else if (wire === 2) {
      const length = varint()
      if (tag >>> 3 === field) yield [at, at + length]
      at += length
    } else throw new Error(`protobuf wire type ${wire} at ${at}`)
  }
}

/**
 * Spans in an ExportTraceServiceRequest: resource_spans (1) > scope_spans (2) > spans (2),
 * counted by their framing, without decoding a span.
 */
function countSpans(body: Buffer): number {
  let spans = 0
  for (const [rs, rsEnd] of embedded(body, 0, body.length, 1)) {
    for (const [ss, ssEnd] of embedded(body, rs, rsEnd, 2)) {
      for (const _span of embedded(body, ss, ssEnd, 2)) spans++
    }
  }
  return spans
}

const server = createServer((req, res) => {
  void req.toArray().then((chunks: Buffer[]) => {
    const body = Buffer.concat(chunks)
    counts.requests++
    counts.bytes += body.length
    if (req.method !== 'POST' || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/x-protobuf') {
      counts.refused++
      res.writeHead(415).end()
      return
    }
    counts.spans += countSpans(body)
    // An empty ExportTraceServiceResponse: everything accepted.
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }))

process.on('message', (message) => {
  if (message === 'counts') process.send!({ ...counts })
  if (message === 'stop') {
    server.closeAllConnections()
    server.close(() => process.exit(0))
  }
})
process.on('disconnect', () => process.exit(0))
