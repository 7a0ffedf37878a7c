import { signalChange } from '../db/change-signal.ts'
import { CALLER_TOPIC, tag } from '../db/change-topics.ts'
import { lookupByKey } from '../db/coalesce.ts'
import type { Executor } from '../db/engine.ts'
import { phoneCountry } from './phone.ts'

/**
 * The off-ledger phone number -> KNS token map (the ledger never stores the number).
 * `source` says how the link came to be: minted by this service, or linked by an operator.
 */
export interface NumberLink {
  phone: string
  objectId: string
  source: 'minted' | 'linked'
  country: string | null
  createdAt: number
}

/** Change topic of everything caller verification caches (see src/caller/key-directory.ts). */

interface NumberRow { phone: string; object_id: string; source: 'minted' | 'linked'; country: string | null; created_at: number }

function fromRow(row: NumberRow): NumberLink {
  return { phone: row.phone, objectId: row.object_id, source: row.source, country: row.country, createdAt: Number(row.created_at) }
}

export async function findByPhone(db: Executor, phone: string): Promise<NumberLink | null> {
  const row = await lookupByKey<NumberRow>(db, 'SELECT * FROM numbers WHERE phone = $1',
    'SELECT * FROM numbers WHERE phone = ANY($1::text[])', 'phone', phone)
  return row === undefined ? null : fromRow(row)
}

export async function findByObjectId(db: Executor, objectId: string): Promise<NumberLink | null> {
  const row = await db.get<NumberRow>('SELECT * FROM numbers WHERE object_id = $1', [objectId.toLowerCase()])
  return row === undefined ? null : fromRow(row)
}

/**
 * Points `phone` at `objectId`, replacing an earlier link of either side: one number, one
 * token. Keeps the original sign-up time when only the token changes.
 */
export async function linkNumber(db: Executor, phone: string, objectId: string, source: NumberLink['source']): Promise<NumberLink> {
  const id = objectId.toLowerCase()
  const displaced = await db.all<{ phone: string }>('SELECT phone FROM numbers WHERE object_id = $1 AND phone <> $2', [id, phone])
  await db.run('DELETE FROM numbers WHERE object_id = $1 AND phone <> $2', [id, phone])
  await db.run(
    `INSERT INTO numbers (phone, object_id, source, country, created_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (phone) DO UPDATE SET object_id = excluded.object_id, source = excluded.source`,
    [phone, id, source, phoneCountry(phone), Date.now()])
  // Caller verification caches number -> token -> keys.
  for (const { phone: other } of displaced) await signalChange(db, CALLER_TOPIC, tag.phone(other))
  await signalChange(db, CALLER_TOPIC, tag.phone(phone))
  return (await findByPhone(db, phone))!
}
