import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { PayloadTooLargeError, ValidationError } from '../../errors.ts'
import type { Service } from '../../service.ts'
import { createClientHasher } from '../../stats/ingest/client-hash.ts'
import { ingestSessions, upsertGateways, upsertWifiNodes } from '../../stats/ingest/ingest.ts'
import { MAX_BATCH, UsageRejected } from '../../contract/stats-schemas.ts'
import { IngestUsage, UpsertGateways, UpsertWifiNodes } from '../../contract/stats-operations.ts'
import { checkBatch } from '../../stats/ingest/validate-session.ts'
import { API_KEY_SECURITY, requireScope } from '../auth.ts'
import { errorBody } from '../error-body.ts'
import { withErrors } from '../../contract/api-schemas.ts'

/** 10 000 sessions of the longest allowed fields are about 7 MB of JSON. */
export const USAGE_BODY_LIMIT = 16 * 1024 * 1024
export const NODES_BODY_LIMIT = 8 * 1024 * 1024
const REPORTED_ERRORS = 1000

/** NDJSON body -> values, with their 0-based line numbers; blank lines are skipped. */
function ndjsonValues(body: string): { values: unknown[]; lines: number[]; errors: { index: number; reason: string }[] } {
  const values: unknown[] = []
  const lines: number[] = []
  const errors: { index: number; reason: string }[] = []
  body.split('\n').forEach((line, index) => {
    if (line.trim() === '') return
    try {
      values.push(JSON.parse(line))
      lines.push(index)
    } catch {
      errors.push({ index, reason: 'not a JSON value' })
    }
  })
  return { values, lines, errors }
}

export async function adminStatsRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const guard = requireScope(service, 'stats')
  const hashClient = createClientHasher(service.secret)

  app.put('/api/v1/admin/gateways', {
    onRequest: guard,
    bodyLimit: NODES_BODY_LIMIT,
    schema: {
      tags: ['statistics admin'],
      summary: 'Upsert gateways by uid',
      description: `A JSON array of at most ${MAX_BATCH} gateways, stored all or nothing. A uid given twice: the last one wins.`,
      security: API_KEY_SECURITY,
      body: UpsertGateways.body,
      response: withErrors({ 200: UpsertGateways.answer }),
    },
  }, async (request) => ({ upserted: await upsertGateways(service.db, request.body) }))

  app.put('/api/v1/admin/wifi-nodes', {
    onRequest: guard,
    bodyLimit: NODES_BODY_LIMIT,
    schema: {
      tags: ['statistics admin'],
      summary: 'Upsert WiFi nodes by uid',
      description: `A JSON array of at most ${MAX_BATCH} WiFi nodes (all seven fields), stored all or nothing. A uid given twice: the last one wins.`,
      security: API_KEY_SECURITY,
      body: UpsertWifiNodes.body,
      response: withErrors({ 200: UpsertWifiNodes.answer }),
    },
  }, async (request) => ({ upserted: await upsertWifiNodes(service.db, request.body) }))

  // NDJSON on this route only: the parser lives in a context of its own (Fastify encapsulation),
  // so the node routes keep answering 415 to it.
  await app.register(async (usage) => {
    usage.addContentTypeParser('application/x-ndjson', { parseAs: 'string', bodyLimit: USAGE_BODY_LIMIT }, (_request, body, done) => done(null, body))
    usage.withTypeProvider<TypeBoxTypeProvider>().post('/api/v1/admin/usage', {
      onRequest: guard,
      bodyLimit: USAGE_BODY_LIMIT,
      // Sessions are checked one by one in the handler, so that a rejected batch lists every
      // bad line; the schema below documents them.
      validatorCompiler: () => () => true,
      schema: {
        tags: ['statistics admin'],
        summary: 'Ingest usage sessions',
        description: `A JSON array, or NDJSON (Content-Type: application/x-ndjson, one session per line), of at most ${MAX_BATCH} ` +
          'sessions (413 beyond). The batch is stored whole or not at all: with any bad session, 400 lists every bad one ' +
          '(index = array position or 0-based line). Idempotent: a session already stored (same sessionId and start) is ' +
          'counted in `duplicates` and changes nothing. start/end: ISO 8601 with a zone, or epoch ms; start at most 5 minutes ' +
          'ahead of the server clock; end >= start. clientId is stored only as a keyed hash. 422 VALUE_OUT_OF_RANGE (nothing ' +
          'stored) when the batch would carry an hour, day or week total past 2^63 - 1 bytes.',
        security: API_KEY_SECURITY,
        body: IngestUsage.body,
        response: withErrors({ 200: IngestUsage.answer, 400: UsageRejected }),
      },
    }, async (request, reply) => {
      const body: unknown = request.body
      let values: unknown[]
      let indexOf = (i: number) => i
      let parseErrors: { index: number; reason: string }[] = []
      // The content type decides, not the value: a JSON string is not NDJSON.
      if (/^application\/x-ndjson\b/i.test(request.headers['content-type'] ?? '') && typeof body === 'string') {
        const parsed = ndjsonValues(body)
        values = parsed.values
        parseErrors = parsed.errors
        indexOf = (i) => parsed.lines[i]!
      } else if (Array.isArray(body)) {
        values = body
      } else {
        throw new ValidationError('body must be a JSON array of sessions, or NDJSON with Content-Type application/x-ndjson')
      }
      if (values.length + parseErrors.length > MAX_BATCH) throw new PayloadTooLargeError(`at most ${MAX_BATCH} sessions per request`)
      const { sessions, errors } = checkBatch(values, Date.now())
      const all = [...parseErrors, ...errors.map((e) => ({ index: indexOf(e.index), reason: e.reason }))].sort((a, b) => a.index - b.index)
      if (all.length > 0) {
        const text = `${all.length} invalid session${all.length === 1 ? '' : 's'}; nothing was stored (first: #${all[0]!.index}: ${all[0]!.reason})`
        return reply.code(400).send({ ...errorBody('INVALID_REQUEST', text, String(request.id)), errors: all.slice(0, REPORTED_ERRORS) })
      }
      return ingestSessions(service.db, hashClient, sessions)
    })
  })
}
