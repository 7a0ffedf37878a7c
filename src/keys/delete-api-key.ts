import type { Database } from '../db/engine.ts'
import { ConflictError, NotFoundError } from '../errors.ts'

/** The rows that name an API key and must stay attributable to it (approvals, their events, webhooks). */
const RECORDS = [
  ['approvals', 'SELECT 1 AS found FROM approvals WHERE api_key_id = $1 LIMIT 1'],
  ['approval events', 'SELECT 1 AS found FROM approval_events WHERE api_key_id = $1 LIMIT 1'],
  ['webhooks', 'SELECT 1 AS found FROM webhook_subscriptions WHERE api_key_id = $1 LIMIT 1'],
] as const

/**
 * `kns api-key delete <id>`: removes a key that left no record (a key made to try something,
 * like the tours' own), its signing binding with it; running servers refuse it within their key
 * cache's bound, as after a revocation. A key that approvals, events or webhooks name is
 * refused: revoking it keeps them attributable.
 */
export async function deleteApiKey(db: Database, id: string): Promise<{ id: string; vendor: string }> {
  return db.transaction(async (tx) => {
    const key = await tx.get<{ id: string; vendor: string }>('SELECT id, vendor FROM api_keys WHERE id = $1', [id])
    if (key === undefined) throw new NotFoundError(`no API key with id ${id}`, { field: 'id' })
    for (const [what, query] of RECORDS) {
      if (await tx.get(query, [id]) !== undefined) {
        throw new ConflictError(`API key ${id} has ${what} on record: revoke it instead (kns api-key revoke ${id}), which keeps them attributable`, { field: 'id' })
      }
    }
    await tx.run('DELETE FROM api_keys WHERE id = $1', [id])
    return { id: key.id, vendor: key.vendor }
  })
}
