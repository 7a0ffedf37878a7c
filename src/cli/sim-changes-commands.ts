import { existsSync } from 'node:fs'
import { ValidationError } from '../errors.ts'
import { canonicalPhone, isE164 } from '../identity/phone.ts'
import type { Service } from '../service.ts'
import { CHANGE_FILE_FORMATS, changeFileFormat, importChanges } from '../swaps/import-changes.ts'
import { optional, required, type Parsed } from './args.ts'
import { UsageError, type Output } from './output.ts'

export const SIM_CHANGES_OPTIONS = { format: { type: 'string' }, limit: { type: 'string' } } as const

const EXTENSIONS = Object.keys(CHANGE_FILE_FORMATS).join('|')

export const SIM_CHANGES_USAGE = `  sim-changes import <file> [--format csv|ndjson]
                                          record the operator's SIM and device changes (what SIM Swap and
                                          Device Swap answer from), streamed in transactions of 500; <file>
                                          ${EXTENSIONS}: CSV with a header row (eventId,phoneNumber,kind,
                                          changedAt[,approvalNumber]) or NDJSON, one object a line; re-runnable
                                          (what is recorded counts as duplicates); a bad line stops it, named
  sim-changes list --phone <+E164> [--limit <n>]
                                          a number's kept change records, newest first
  sim-changes prune                       delete the records older than SIM_SWAP_MONITORED_DAYS (the server
                                          does it hourly)`

/** `kns sim-changes import|list|prune`. */
export async function simChangesCommand(service: Service, sub: string | undefined, { values, positionals }: Parsed, out: Output): Promise<void> {
  const { swaps } = service
  if (sub === 'import') {
    const path = positionals[2]
    if (path === undefined || positionals.length > 3) throw new UsageError('kns sim-changes import takes one file: kns sim-changes import <file> [--format csv|ndjson]')
    const format = changeFileFormat(path, optional(values, 'format'))
    if (!existsSync(path)) throw new ValidationError(`${path}: no such file`)
    const r = await importChanges(swaps, path, format)
    out.result({ ...r }, `${r.read} changes read: ${r.recorded} recorded, ${r.duplicates} already recorded, ${r.outsidePeriod} older than the monitored period (their lines recorded)`)
  } else if (sub === 'list') {
    const phone = required(values, 'phone')
    if (!isE164(phone)) throw new ValidationError('--phone must be an E.164 number (+ and 6-15 digits)', { field: 'phone' })
    const raw = optional(values, 'limit') ?? '100'
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000')
    const changes = (await swaps.list(canonicalPhone(phone), Number(raw))).map((c) => ({
      eventId: c.eventId, phoneNumber: c.phone, kind: c.kind, changedAt: new Date(c.changedAt).toISOString(), approvalNumber: c.approvalNumber,
      recordedBy: c.recordedBy, recordedAt: new Date(c.recordedAt).toISOString(),
    }))
    out.result({ changes }, changes.length === 0 ? `no change records kept for ${canonicalPhone(phone)}`
      : changes.map((c) => `${c.changedAt}  ${c.kind.padEnd(13)}  ${c.eventId}${c.approvalNumber === null ? '' : `  approval ${c.approvalNumber}`}`).join('\n'))
  } else if (sub === 'prune') {
    const simChanges = await swaps.prune()
    out.result({ monitoredDays: swaps.monitoredDays, simChanges },
      `deleted ${simChanges} SIM and device change records older than ${swaps.monitoredDays} days (SIM_SWAP_MONITORED_DAYS)`)
  } else {
    throw new UsageError(`unknown command 'kns sim-changes ${sub ?? ''}' (import, list, prune)`)
  }
}
