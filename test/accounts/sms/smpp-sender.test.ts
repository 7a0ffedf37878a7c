/**
 * The SMPP sender against a real SMSC on 127.0.0.1 (the smpp package's server side): bind,
 * submit_sm as the SMSC sees it, refusals, throttling, deadlines, re-bind, keep-alive, unbind.
 */
import { afterEach, beforeEach, test } from 'node:test'
import assert from 'node:assert/strict'
import smpp, { type PDU } from 'smpp'
import { SmppSender, type SmppSenderOptions } from '../../../src/accounts/sms/smpp-sender.ts'
import { deliveryError as refused } from './delivery-error.ts'
import { startSmsc, until, type FakeSmsc } from '../../support/fake-smsc.ts'

let smsc: FakeSmsc
const senders: SmppSender[] = []

beforeEach(async () => { smsc = await startSmsc() })
afterEach(async () => {
  await Promise.all(senders.splice(0).map((sender) => sender.close()))
  await smsc.close()
})

function sender(options: Partial<SmppSenderOptions> = {}): SmppSender {
  const created = new SmppSender({ url: smsc.url(), from: 'KNS', systemType: 'otp', timeoutMs: 2000, bindTimeoutMs: 2000, ...options })
  senders.push(created)
  return created
}

const code = { to: '+46701234567', text: 'Your KNS code is 493817' }
const shortMessage = (pdu: PDU) => (pdu.short_message as { message: string }).message

/** The rejection is an SmsDeliveryError with these properties, saying nothing secret. */
const deliveryError = (expected: Parameters<typeof refused>[0]) => refused(expected, ['secret', 'wrongpw', '493817', code.text])

test('a good bind delivers one submit_sm: number without +, international; the text, GSM default alphabet; the sender ID', async () => {
  const sms = sender()
  assert.equal(sms.bound, false, 'bound lazily, not at construction')
  await sms.send(code)
  assert.equal(smsc.binds.length, 1)
  const bind = smsc.binds[0]!
  assert.equal(bind.command, 'bind_transmitter')
  assert.equal(bind.system_id, 'kns')
  assert.equal(bind.system_type, 'otp')
  assert.equal(bind.interface_version, 0x34, 'SMPP 3.4')
  assert.equal(smsc.submits.length, 1)
  const submit = smsc.submits[0]!
  assert.equal(submit.destination_addr, '46701234567')
  assert.equal(submit.dest_addr_ton, 1)
  assert.equal(submit.dest_addr_npi, 1)
  assert.equal(submit.source_addr, 'KNS')
  assert.equal(submit.source_addr_ton, 5, 'alphanumeric sender ID')
  assert.equal(submit.source_addr_npi, 0)
  assert.equal(submit.data_coding, 0)
  assert.equal(shortMessage(submit), code.text)
  await sms.send({ to: '+12025550123', text: 'second' })
  assert.equal(smsc.binds.length, 1, 'one persistent session')
  assert.equal(smsc.submits.length, 2)
})

test('text outside the GSM alphabet goes as UCS-2; a +number sender ID as international', async () => {
  const sms = sender({ from: '+46700000000' })
  await sms.send({ to: '+46701234567', text: 'Код 493817 ✓' })
  const submit = smsc.submits[0]!
  assert.equal(submit.data_coding, 8)
  assert.equal(shortMessage(submit), 'Код 493817 ✓')
  assert.deepEqual([submit.source_addr, submit.source_addr_ton, submit.source_addr_npi], ['46700000000', 1, 1])
})

test('a bind with a wrong password is refused: a clear, non-retryable error without the password', async () => {
  const sms = sender({ url: smsc.url('wrongpw') })
  await assert.rejects(sms.send(code), deliveryError({ reason: 'refused', retryable: false, message: /refused the bind: ESME_RINVPASWD/ }))
  assert.equal(smsc.submits.length, 0)
  assert.equal(sms.bound, false)
})

test('an SMSC that is not there: a retryable network error', async () => {
  const port = smsc.port
  await smsc.close()
  const sms = sender({ url: `smpp://kns:secret@127.0.0.1:${port}` })
  await assert.rejects(sms.send(code), deliveryError({ reason: 'network', retryable: true, message: /ECONNREFUSED/ }))
  smsc = await startSmsc() // for afterEach
})

test('ESME_RTHROTTLED and ESME_RMSGQFUL are retryable; another refusal is not', async () => {
  const sms = sender()
  smsc.onSubmit = () => smpp.errors.ESME_RTHROTTLED
  await assert.rejects(sms.send(code), deliveryError({ reason: 'throttled', retryable: true, message: /ESME_RTHROTTLED \(0x58\)/ }))
  smsc.onSubmit = () => smpp.errors.ESME_RMSGQFUL
  await assert.rejects(sms.send(code), deliveryError({ reason: 'throttled', retryable: true, message: /ESME_RMSGQFUL/ }))
  smsc.onSubmit = () => smpp.errors.ESME_RINVDSTADR
  await assert.rejects(sms.send(code), deliveryError({ reason: 'rejected', retryable: false, message: /ESME_RINVDSTADR/ }))
  smsc.onSubmit = () => 0
  await sms.send(code)
  assert.equal(smsc.binds.length, 1, 'a refused message leaves the session bound')
})

test('an SMSC that never answers submit_sm: the send fails at its deadline', { timeout: 5000 }, async () => {
  const sms = sender({ timeoutMs: 300 })
  smsc.onSubmit = () => 'silent'
  const started = Date.now()
  await assert.rejects(sms.send(code), deliveryError({ reason: 'timeout', retryable: true, message: /within 300 ms/ }))
  const took = Date.now() - started
  assert.ok(took >= 280 && took < 1500, `took ${took} ms`)
  assert.equal(smsc.submits.length, 1)
})

test('an SMSC that never answers the bind: the bind deadline', { timeout: 5000 }, async () => {
  const sms = sender({ bindTimeoutMs: 200, timeoutMs: 2000 })
  smsc.answerBind = false
  await assert.rejects(sms.send(code), deliveryError({ reason: 'timeout', retryable: true, message: /no bind answer/ }))
})

test('after the SMSC drops the connection, the next send binds again and succeeds', { timeout: 5000 }, async () => {
  const sms = sender()
  await sms.send(code)
  await smsc.dropAll()
  await until(() => !sms.bound)
  await sms.send(code)
  assert.equal(smsc.binds.length, 2)
  assert.equal(smsc.submits.length, 2)
})

test('a submit awaiting its answer when the connection drops fails at once, retryable', { timeout: 5000 }, async () => {
  const sms = sender({ timeoutMs: 5000 })
  smsc.onSubmit = () => 'silent'
  const sending = sms.send(code)
  await until(() => smsc.submits.length === 1)
  const started = Date.now()
  const rejected = assert.rejects(sending, deliveryError({ reason: 'network', retryable: true, message: /closed before the SMSC answered/ }))
  await smsc.dropAll()
  await rejected
  assert.ok(Date.now() - started < 1000)
})

test('at most maxInFlight submits await their answers; the next goes when one is answered', { timeout: 5000 }, async () => {
  const sms = sender({ maxInFlight: 2 })
  const held: Array<() => void> = []
  smsc.onSubmit = (pdu, session) => { held.push(() => session.send(pdu.response())); return 'silent' }
  const sends = [1, 2, 3].map((n) => sms.send({ to: '+46701234567', text: `message ${n}` }))
  await until(() => smsc.submits.length === 2)
  await new Promise((resolve) => setTimeout(resolve, 100))
  assert.equal(smsc.submits.length, 2, 'the third waits for a slot')
  held.shift()!()
  await until(() => smsc.submits.length === 3)
  for (const answer of held.splice(0)) answer()
  await Promise.all(sends)
})

test('enquire_link keeps the session; one left unanswered drops it, and the next send binds again', { timeout: 5000 }, async () => {
  const sms = sender({ enquireLinkMs: 50, bindTimeoutMs: 100 })
  await sms.send(code)
  await until(() => smsc.enquireLinks >= 2)
  assert.equal(sms.bound, true)
  smsc.answerEnquireLink = false
  await until(() => !sms.bound, 1000)
  smsc.answerEnquireLink = true
  await sms.send(code)
  assert.equal(smsc.binds.length, 2)
})

test('close() unbinds and closes the connection; a send after it is refused', { timeout: 5000 }, async () => {
  const sms = sender()
  await sms.send(code)
  assert.equal(smsc.connections(), 1)
  await sms.close()
  assert.equal(smsc.unbinds, 1)
  await until(() => smsc.connections() === 0)
  assert.equal(sms.bound, false)
  await assert.rejects(sms.send(code), deliveryError({ reason: 'closed', retryable: false }))
})

test('a number that is not E.164 is refused before anything is sent', async () => {
  const sms = sender()
  await assert.rejects(sms.send({ to: '46701234567', text: 'x' }), deliveryError({ reason: 'rejected', retryable: false }))
  assert.equal(smsc.binds.length, 0)
})
