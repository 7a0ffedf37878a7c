import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import pino from 'pino'
import { LogSmsSender } from '../../../src/accounts/sms/log-sender.ts'
import { SmsDeliveryError } from '../../../src/accounts/sms/sms-sender.ts'

test('the log sender writes one warning line with the number and the text, through a pino logger', async () => {
  const lines: string[] = []
  const sink = new Writable({ write(chunk: Buffer, _encoding, done) { lines.push(...chunk.toString().trim().split('\n')); done() } })
  const sms = new LogSmsSender(pino({ level: 'info' }, sink))
  assert.equal(sms.kind, 'log')
  await sms.send({ to: '+46701234567', text: 'Your KNS code is 493817' })
  assert.equal(lines.length, 1)
  const line = JSON.parse(lines[0]!) as { level: number; msg: string; sms: { to: string; text: string } }
  assert.equal(line.level, 40, 'warn')
  assert.deepEqual(line.sms, { to: '+46701234567', text: 'Your KNS code is 493817' })
  assert.match(line.msg, /\+46701234567.*Your KNS code is 493817/)
})

test('the log sender refuses a number that is not E.164, and sends nothing once closed', async () => {
  const calls: unknown[] = []
  const sms = new LogSmsSender({ warn: (obj, msg) => { calls.push([obj, msg]) } })
  await assert.rejects(sms.send({ to: '0701234567', text: 'x' }), SmsDeliveryError)
  await sms.close()
  await assert.rejects(sms.send({ to: '+46701234567', text: 'x' }), (error: unknown) => error instanceof SmsDeliveryError && error.reason === 'closed')
  assert.equal(calls.length, 0)
})
