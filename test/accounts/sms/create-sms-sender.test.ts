import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createSmsSender, type SmsSenderOptions } from '../../../src/accounts/sms/create-sms-sender.ts'
import { ConfigError } from '../../../src/errors.ts'

const logger = { info: () => {}, warn: () => {} }

/** It throws ConfigError naming `variable`, and never quoting the password. */
function configError(variable: string) {
  return (error: unknown) => {
    assert.ok(error instanceof ConfigError, String(error))
    assert.equal(error.code, 'INVALID_CONFIG')
    assert.match(error.message, new RegExp(variable))
    assert.ok(!error.message.includes('pw123'), error.message)
    return true
  }
}

test('each SMS_DELIVERY gives its sender; nothing connects at creation', async () => {
  const log = createSmsSender({ delivery: 'log' }, logger)
  const smpp = createSmsSender({ delivery: 'smpp', smppUrl: 'smpp://kns:pw123@127.0.0.1:1', smsFrom: 'KNS', smppSystemType: 'otp' }, logger)
  const http = createSmsSender({ delivery: 'http', httpUrl: 'http://kannel:13013/cgi-bin/sendsms?username=kns&password=pw123' }, logger)
  assert.deepEqual([log.kind, smpp.kind, http.kind], ['log', 'smpp', 'http'])
  await Promise.all([log.close(), smpp.close(), http.close()])
})

test('a missing or bad setting throws ConfigError naming its variable', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ delivery: 'smpp' }, 'SMPP_URL'],
    [{ delivery: 'smpp', smppUrl: 'http://kns:pw123@smsc:2775' }, 'SMPP_URL'],
    [{ delivery: 'smpp', smppUrl: 'smpp://smsc:2775' }, 'SMPP_URL'],
    [{ delivery: 'smpp', smppUrl: 'smpp://kns:pw123@smsc:2775?bind=receiver' }, 'SMPP_URL'],
    [{ delivery: 'smpp', smppUrl: 'smpp://kns:pw123@smsc:2775', smppSystemType: 'x'.repeat(13) }, 'SMPP_SYSTEM_TYPE'],
    [{ delivery: 'smpp', smppUrl: 'smpp://kns:pw123@smsc:2775', smsFrom: 'A sender ID too long' }, 'SMS_FROM'],
    [{ delivery: 'http' }, 'SMS_HTTP_URL'],
    [{ delivery: 'http', httpUrl: 'kannel/sendsms?password=pw123' }, 'SMS_HTTP_URL'],
    [{ delivery: 'http', httpUrl: 'http://kannel/', httpMethod: 'PUT' }, 'SMS_HTTP_METHOD'],
    [{ delivery: 'log', timeoutMs: 0 }, 'SMS_TIMEOUT_MS'],
    [{ delivery: 'sms' }, 'SMS_DELIVERY'],
  ]
  for (const [options, variable] of cases) {
    assert.throws(() => createSmsSender(options as unknown as SmsSenderOptions, logger), configError(variable), JSON.stringify(options))
  }
})
