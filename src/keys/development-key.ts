/**
 * The first start's development key: one API key with every scope, made on an empty embedded
 * database so a newcomer can try every endpoint at once. Marked when it is made (the setting
 * `dev_key_issued` holds its id, in the same transaction), so that it is told apart from keys an
 * operator made later and so never made twice, and so that production checks can say it is
 * still active (src/lib/production-checks.ts).
 */
import type { Database, Executor } from '../db/engine.ts'
import { getSetting } from '../db/settings.ts'
import { countApiKeys, createApiKey, SCOPES, type ApiKey } from './api-keys.ts'

const MARKER = 'dev_key_issued'

/** Makes the development key on a database that never had a key nor one before; null otherwise. */
export async function createDevelopmentKey(db: Database, rate: number): Promise<(ApiKey & { key: string }) | null> {
  return db.transaction(async (tx) => {
    if ((await countApiKeys(tx)) > 0 || (await getSetting(tx, MARKER)) !== undefined) return null
    // Owners see the vendor's name on the approval page: one that says what it is.
    const key = await createApiKey(tx, { vendor: 'Example Vendor (development key)', scopes: [...SCOPES], rate })
    await tx.run('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [MARKER, key.id])
    return key
  })
}

/** The development key's id while it is not revoked; null when there is none or it is revoked. */
export async function activeDevelopmentKey(db: Executor): Promise<string | null> {
  const row = await db.get<{ id: string }>(
    `SELECT k.id FROM api_keys k JOIN settings s ON s.name = $1 AND s.value = k.id WHERE k.revoked_at IS NULL`, [MARKER])
  return row?.id ?? null
}
