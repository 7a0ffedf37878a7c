/** Each SIM change records operation: its schemas, each with one realistic example (see api-operations.ts). */
import { exemplified, exemplifiedParams } from './examples.ts'
import { SimChangeBatch, SimChangeList, SimChangesQuery, SimChangesRecorded } from './swaps-schemas.ts'

const PHONE = '+447700900123'

/** POST /api/v1/admin/sim-changes */
export const RecordSimChanges = {
  body: exemplified(SimChangeBatch, {
    summary: 'A SIM replacement the owner approved in KNS, and the new phone put in it',
    value: {
      changes: [
        { eventId: 'vf-uk:swap:20261127-0815-88412', phoneNumber: PHONE, kind: 'sim-change', changedAt: '2026-11-27T08:15:00Z', approvalNumber: '22c855f9b4801ff9e0d8c2ec' },
        { eventId: 'vf-uk:imei:20261127-0931-10277', phoneNumber: PHONE, kind: 'device-change', changedAt: '2026-11-27T09:31:12+00:00' },
      ],
    },
  }),
  answer: exemplified(SimChangesRecorded, { summary: 'Both new', value: { recorded: 2, duplicates: 0, outsidePeriod: 0 } }),
}

/** GET /api/v1/admin/sim-changes */
export const ListSimChanges = {
  querystring: exemplifiedParams(SimChangesQuery, { phoneNumber: PHONE, limit: '20' }),
  answer: exemplified(SimChangeList, {
    summary: 'The number\'s kept records, newest first',
    value: {
      changes: [
        {
          eventId: 'vf-uk:imei:20261127-0931-10277', phoneNumber: PHONE, kind: 'device-change', changedAt: '2026-11-27T09:31:12.000Z', approvalNumber: null,
          recordedBy: 'key:3f9a1c0d5e7b2a64', recordedAt: '2026-11-27T09:32:00.418Z',
        },
        {
          eventId: 'vf-uk:swap:20261127-0815-88412', phoneNumber: PHONE, kind: 'sim-change', changedAt: '2026-11-27T08:15:00.000Z',
          approvalNumber: '22c855f9b4801ff9e0d8c2ec', recordedBy: 'key:3f9a1c0d5e7b2a64', recordedAt: '2026-11-27T09:32:00.418Z',
        },
      ],
    },
  }),
}
