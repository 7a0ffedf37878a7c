/** Request and response shapes of the SIM and device change records (`/api/v1/admin/sim-changes`). */
import { Type, type Static } from 'typebox'
import { E164 } from './api-schemas.ts'
import { StringEnum } from './string-enum.ts'
import { CHANGE_EVENT_ID, RFC3339_DATE_TIME } from './text.ts'

/** What the operator reports of a line (the same list as src/swaps/latest-change.ts CHANGE_KINDS; a test compares them). */
export const CHANGE_KIND_NAMES = ['activation', 'sim-change', 'device-change'] as const

/** Changes per request (and per transaction of `kns sim-changes import`). */
export const MAX_CHANGES_PER_BATCH = 1000

const EventId = Type.String({ pattern: CHANGE_EVENT_ID, description: 'the operator\'s own ID of the change (1-128 of A-Z a-z 0-9 . _ : -): reporting it again changes nothing' })
const Kind = StringEnum(CHANGE_KIND_NAMES, {
  description: '`activation`: the line got its first SIM and device; `sim-change`: a new SIM or IMSI on the number (eSIM included); `device-change`: a new device for the number',
})

export const SimChange = Type.Object({
  eventId: EventId,
  phoneNumber: E164,
  kind: Kind,
  changedAt: Type.String({ pattern: RFC3339_DATE_TIME, maxLength: 64, description: 'when it happened: RFC 3339 with a time zone; not in the future, not older than the monitored period (SIM_SWAP_MONITORED_DAYS)' }),
  approvalNumber: Type.Optional(Type.String({ pattern: '^[0-9a-f]{24}$', description: 'the KNS approval that authorised the change: an approved request for this number' })),
})
export type SimChange = Static<typeof SimChange>

export const SimChangeBatch = Type.Object({
  changes: Type.Array(SimChange, { minItems: 1, maxItems: MAX_CHANGES_PER_BATCH, description: `1-${MAX_CHANGES_PER_BATCH} changes, recorded all or none` }),
})

export const SimChangesRecorded = Type.Object({
  recorded: Type.Integer({ description: 'changes stored by this request' }),
  duplicates: Type.Integer({ description: 'changes already stored with the same content (or given twice in the batch): nothing changed' }),
  outsidePeriod: Type.Integer({ description: 'changes older than the monitored period (SIM_SWAP_MONITORED_DAYS): their lines are known from now on, the changes themselves are not kept' }),
})

export const StoredSimChange = Type.Object({
  eventId: Type.String(),
  phoneNumber: Type.String({ description: 'E.164, with its +' }),
  kind: Kind,
  changedAt: Type.String({ format: 'date-time' }),
  approvalNumber: Type.Union([Type.String(), Type.Null()]),
  recordedBy: Type.String({ description: '`key:<API key id>` or `cli`' }),
  recordedAt: Type.String({ format: 'date-time' }),
})
export const SimChangeList = Type.Object({ changes: Type.Array(StoredSimChange) })

export const SimChangesQuery = Type.Object({
  phoneNumber: E164,
  limit: Type.Optional(Type.String({ pattern: '^(1000|[1-9][0-9]{0,2})$', description: 'at most this many, newest first (1-1000, default 100)' })),
}, { additionalProperties: false })
