/**
 * `kns sim-changes import <file>`: CSV or NDJSON streamed in batches through the same checks as
 * the API; idempotent (a re-import is all duplicates); a bad line named by its number.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { startHarness, type Harness } from '../helpers.ts'
import { randomPhone } from '../support/kns.ts'
import { killAll, oneJson, runKns } from '../support/process.ts'

let h: Harness
before(async () => { h = await startHarness() })
after(async () => {
  await killAll()
  await h.close()
})

/** A loaded machine starts a CLI slowly: the deadline only catches a hang. */
const slow = { timeoutMs: 120_000 }
const kns = (args: string[]) => runKns(args, h.env, slow)
const file = (name: string, text: string) => {
  const path = join(h.env.DATA_DIR!, name)
  writeFileSync(path, text)
  return path
}
const ago = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString()
const count = async () => Number((await h.service.db.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM sim_changes'))!.n)

test('a CSV of several batches is recorded, in any column order, with or without approvalNumber; again: all duplicates', async () => {
  const phone = randomPhone()
  const rows = Array.from({ length: 1203 }, (_, i) => `${ago(i + 1)},"csv:${i}",${i % 2 === 0 ? phone : phone.slice(1)},${['activation', 'sim-change', 'device-change'][i % 3]},`)
  const path = file('changes.csv', `changedAt,eventId,phoneNumber,kind,approvalNumber\n${rows.join('\n')}\n\n`)
  const first = oneJson(await kns(['sim-changes', 'import', path, '--json']))
  assert.deepEqual(first, { read: 1203, recorded: 1203, duplicates: 0, outsidePeriod: 0 })
  const row = await h.service.db.get<Record<string, unknown>>('SELECT phone, kind, approval_number, recorded_by FROM sim_changes WHERE event_id = $1', ['csv:1'])
  assert.deepEqual({ ...row }, { phone, kind: 'sim-change', approval_number: null, recorded_by: 'cli' })
  const again = await kns(['sim-changes', 'import', path])
  assert.equal(again.code, 0, again.stderr)
  assert.match(again.stdout, /1203 changes read: 0 recorded, 1203 already recorded/)
  assert.equal(await count(), 1203)
  const listed = oneJson(await kns(['sim-changes', 'list', '--phone', phone, '--limit', '2', '--json'])) as { changes: Array<{ eventId: string }> }
  assert.deepEqual(listed.changes.map((c) => c.eventId), ['csv:0', 'csv:1'])
})

test('NDJSON (.ndjson, .jsonl, or any name with --format ndjson), blank lines skipped', async () => {
  const line = (id: string, extra: Record<string, unknown> = {}) => JSON.stringify({ eventId: id, phoneNumber: randomPhone(), kind: 'sim-change', changedAt: ago(5), ...extra })
  const jsonl = file('feed.jsonl', `${line('nd:1')}\n\n${line('nd:2', { approvalNumber: null })}\n${line('nd:3')}`)
  assert.deepEqual(oneJson(await kns(['sim-changes', 'import', jsonl, '--json'])), { read: 3, recorded: 3, duplicates: 0, outsidePeriod: 0 })
  const txt = file('feed.txt', `${line('nd:4')}\n${line('nd:1').replace('nd:1', 'nd:5')}\n`)
  assert.equal((await kns(['sim-changes', 'import', txt])).code, 2, 'a name that says no format needs --format')
  assert.deepEqual(oneJson(await kns(['sim-changes', 'import', txt, '--format', 'ndjson', '--json'])), { read: 2, recorded: 2, duplicates: 0, outsidePeriod: 0 })
  assert.equal((await kns(['sim-changes', 'import', txt, '--format', 'xml'])).code, 2)
})

test('a bad line stops the import naming its line; a conflicting one is a conflict; the batches before it stay', async () => {
  const before = await count()
  const good = (i: number) => `bad-file:${i},${randomPhone()},sim-change,${ago(1)},`
  const lines = Array.from({ length: 600 }, (_, i) => good(i))
  lines[550] = `bad-file:550,${randomPhone()},port-out,${ago(1)},`
  const path = file('bad.csv', `eventId,phoneNumber,kind,changedAt,approvalNumber\n${lines.join('\n')}\n`)
  const failed = await kns(['sim-changes', 'import', path, '--json'])
  assert.equal(failed.code, 2, failed.stderr)
  const error = (JSON.parse(failed.stderr.trim().split('\n').at(-1)!) as { error: { code: string; message: string } }).error
  assert.equal(error.code, 'INVALID_REQUEST')
  // Header is line 1: item 550 is on line 552.
  assert.match(error.message, /bad\.csv line 552: kind must be one of activation, sim-change, device-change/)
  assert.equal(await count(), before + 500, 'the first batch of 500 is recorded, the failed one not')

  const conflict = file('conflict.ndjson', JSON.stringify({ eventId: 'bad-file:3', phoneNumber: randomPhone(), kind: 'activation', changedAt: ago(2) }))
  const refused = await kns(['sim-changes', 'import', conflict])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /conflict\.ndjson line 1: eventId bad-file:3 is already recorded with other content/)
  const notJson = file('broken.ndjson', `${JSON.stringify({ eventId: 'x', phoneNumber: randomPhone(), kind: 'activation', changedAt: ago(2) })}\n{"eventId":\n`)
  const broken = await kns(['sim-changes', 'import', notJson])
  assert.equal(broken.code, 2)
  assert.match(broken.stderr, /line 2: not a JSON object/)
  assert.equal((await kns(['sim-changes', 'import', join(h.env.DATA_DIR!, 'missing.csv')])).code, 2)
  assert.equal((await kns(['sim-changes', 'import'])).code, 2)
})
