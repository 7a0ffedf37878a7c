import { hash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Service } from '../../service.ts'
import { AnswerCache } from '../../stats/public/answer-cache.ts'
import { globalStats, nsStats, rangeStats, statsVersion, wifiNodes } from '../../stats/public/queries.ts'
import type { Network } from '../../contract/stats-schemas.ts'
import { GlobalPublicStats, NsPublicStats, RangePublicStats, WifiNodes } from '../../contract/stats-operations.ts'
import { normalizePeriod, WIDTH_NAMES, type Period } from '../../stats/time.ts'
import { publicRateLimit } from '../auth.ts'
import { BODY_LIMITS, useJsonParser } from '../json-body.ts'
import { withErrors } from '../../contract/api-schemas.ts'

/** Explorers poll; a few seconds of staleness is invisible on a chart and spares the database. */
export const CACHE_CONTROL = 'public, max-age=10'

const NOT_MODIFIED = { 304: Type.Null({ description: 'Not Modified: the ETag in If-None-Match is current (no body)' }) }

const PERIOD_NOTE = 'The bucket width follows the length of [start, end): hour up to 3 days, day up to 180 days, week ' +
  '(Monday 00:00 UTC) beyond; the period is then widened to whole UTC buckets, so the series are complete and sum to ' +
  'the period totals. An end in the future counts as now. 400 when start or end is not an ISO 8601 date-time with a ' +
  'zone, when start >= end, when start is in the future, or when the period exceeds 5 years. Cache-Control max-age 10, ' +
  'ETag, 304 on If-None-Match.'

/** Part of every ETag: a change to how answers are computed invalidates what clients hold. */
const ANSWER_FORMAT = 'stats-v1'

function etagOf(text: string): string {
  return `"${hash('sha256', `${ANSWER_FORMAT}|${text}`, 'base64url').slice(0, 27)}"`
}

function matches(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match']
  if (header === undefined) return false
  const weak = (tag: string) => tag.trim().replace(/^W\//, '')
  return header.split(',').some((tag) => tag.trim() === '*' || weak(tag) === etag)
}

function periodKey(period: Period): string {
  return `${WIDTH_NAMES[period.width]}|${period.start}|${period.end}`
}

export async function statsRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { db } = service
  const cache = new AnswerCache()
  const open = publicRateLimit(service)

  // wifi-nodes and global-public-stats take no body, and clients send POSTs with a JSON
  // content type and nothing after it: read an empty JSON body as {} on these routes.
  useJsonParser(app, { emptyAsObject: true })

  /**
   * Answers with ETag and Cache-Control. Versioned answers (the statistics tables) are
   * tagged before computing, from the data version, so a 304 costs one read of it; others
   * (sign-ups, in area A's table) are tagged from the body.
   */
  async function answer<T>(request: FastifyRequest, reply: FastifyReply, key: string, versioned: boolean, compute: () => Promise<T>): Promise<T | undefined> {
    // A 304 is sent here; the handler then returns nothing more (undefined) to Fastify.
    const notModified = () => reply.code(304).send() as unknown as undefined
    reply.header('cache-control', CACHE_CONTROL)
    if (versioned) {
      const version = await statsVersion(db)
      const etag = etagOf(`${version}|${key}`)
      reply.header('etag', etag)
      if (matches(request, etag)) return notModified()
      return cache.get(`${version}|${key}`, compute, true)
    }
    const body = await cache.get(key, compute, false)
    const etag = etagOf(JSON.stringify(body))
    reply.header('etag', etag)
    if (matches(request, etag)) return notModified()
    return body
  }

  app.get('/api/v1/UsageGraph/global-public-stats', {
    onRequest: open,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: ['statistics'],
      summary: 'Totals of both networks: distinct clients ever, GB and sessions',
      description: 'GB are decimal (10^9 bytes, up + down). Cache-Control max-age 10, ETag, 304 on If-None-Match.',
      response: withErrors({ 200: GlobalPublicStats.answer, ...NOT_MODIFIED }),
    },
  }, async (request, reply) => answer(request, reply, 'global', true, () => globalStats(db)))

  for (const [network, path, label] of [['gateway', 'global-public-gateway-stats', 'gateway'], ['wifi', 'global-public-wifi-stats', 'WiFi']] as const) {
    app.post(`/api/v1/UsageGraph/${path}`, {
      onRequest: open,
      bodyLimit: BODY_LIMITS.small,
      schema: {
        tags: ['statistics'],
        summary: `Usage of the ${label} network over a period, with its series and nodes`,
        description: `${PERIOD_NOTE}\n\ntotalCumulative* count everything before the (widened) end. A session counts, with all ` +
          'its bytes, in the bucket where it started; `clients` per bucket are the distinct clients active in it, and ' +
          'currentClients the distinct clients of the whole period. MB and GB are decimal.' +
          (network === 'wifi' ? ' In gatewayNodes, `location` is the WiFi node name and `spectrum` is "wifi".' : ''),
        body: RangePublicStats.body,
        response: withErrors({ 200: RangePublicStats.answer, ...NOT_MODIFIED }),
      },
    }, async (request, reply) => {
      const period = normalizePeriod(request.body.start, request.body.end, Date.now())
      return answer(request, reply, `${network}|${periodKey(period)}`, true, () => rangeStats(db, network as Network, period))
    })
  }

  app.post('/api/v1/Wifi/wifi-nodes', {
    onRequest: open,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: ['statistics'],
      summary: 'All WiFi nodes',
      description: 'Takes no request body (none, an empty one or `{}`; anything sent is ignored). Cache-Control max-age 10, ' +
        'ETag, 304 on If-None-Match.',
      response: withErrors({ 200: WifiNodes.answer, ...NOT_MODIFIED }),
    },
  }, async (request, reply) => answer(request, reply, 'wifi-nodes', true, () => wifiNodes(db)))

  app.post('/api/v1/UsageGraph/global-public-ns-stats', {
    onRequest: open,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: ['statistics'],
      summary: 'Number-system sign-ups, overall and per country, over a period',
      description: `${PERIOD_NOTE}\n\nA sign-up is a number linked to a KNS token (minted by this service or linked by an ` +
        'operator), at the time of its first link. Country keys are ISO 3166-1 alpha-2; ZZ for ' +
        'numbers of no single country. totalNS and totalPerCountry count sign-ups before the (widened) end; perCountry ' +
        'lists the countries with sign-ups in the period, each array aligned with ts.',
      body: NsPublicStats.body,
      response: withErrors({ 200: NsPublicStats.answer, ...NOT_MODIFIED }),
    },
  }, async (request, reply) => {
    const period = normalizePeriod(request.body.start, request.body.end, Date.now())
    return answer(request, reply, `ns|${periodKey(period)}`, false, () => nsStats(db, period))
  })
}
