import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { withErrors } from '../../contract/api-schemas.ts'
import { ListSimChanges, RecordSimChanges } from '../../contract/swaps-operations.ts'
import { MAX_CHANGES_PER_BATCH } from '../../contract/swaps-schemas.ts'
import { canonicalPhone } from '../../identity/phone.ts'
import type { Service } from '../../service.ts'
import { API_KEY_SECURITY, requireScope } from '../auth.ts'

/**
 * 1000 changes of the longest fields (a 128-character eventId, a 64-character changedAt) are
 * about 350 KB of JSON; room for pretty-printing.
 */
export const SIM_CHANGES_BODY_LIMIT = 1024 * 1024

/** The operator's SIM and device change reports (`kns sim-changes import` over HTTP), under the `sim-changes` scope. */
export async function adminSimChangeRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const guard = requireScope(service, 'sim-changes')
  const tags = ['SIM changes admin']

  app.post('/api/v1/admin/sim-changes', {
    onRequest: guard,
    bodyLimit: SIM_CHANGES_BODY_LIMIT,
    schema: {
      tags, security: API_KEY_SECURITY,
      summary: 'Record SIM and device changes (activations, SIM changes, device changes)',
      description: `1-${MAX_CHANGES_PER_BATCH} changes, recorded all or none: with any bad one, 400 names its index and field and nothing is stored. ` +
        'Idempotent by `eventId`: a change already recorded with the same content counts in `duplicates` and changes nothing; ' +
        'the same `eventId` with other content is 409 `CONFLICT`. `changedAt` at most 5 minutes ahead of the server clock and not older than ' +
        'the monitored period (SIM_SWAP_MONITORED_DAYS). `approvalNumber`, when given, must name an approved KNS approval for the same number.',
      body: RecordSimChanges.body,
      response: withErrors({ 200: RecordSimChanges.answer }),
    },
  }, async (request) => {
    const result = await service.swaps.record(request.body.changes, `key:${request.apiKey!.id}`)
    // The subscriptions' events were queued with the changes: this process's deliveries go now
    // (the others' find them at their next poll, within a second).
    if (result.recorded > 0) service.events.decided()
    return result
  })

  app.get('/api/v1/admin/sim-changes', {
    onRequest: guard,
    schema: {
      tags, security: API_KEY_SECURITY, summary: 'A number\'s kept change records, newest first',
      description: 'Only what the monitored period keeps (older records are pruned).',
      querystring: ListSimChanges.querystring, response: withErrors({ 200: ListSimChanges.answer }),
    },
  }, async (request) => {
    const found = await service.swaps.list(canonicalPhone(request.query.phoneNumber), Number(request.query.limit ?? 100))
    return {
      changes: found.map((c) => ({
        eventId: c.eventId, phoneNumber: c.phone, kind: c.kind, changedAt: new Date(c.changedAt).toISOString(), approvalNumber: c.approvalNumber,
        recordedBy: c.recordedBy, recordedAt: new Date(c.recordedAt).toISOString(),
      })),
    }
  })
}
