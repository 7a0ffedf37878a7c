import assert from 'node:assert/strict'
import { SmsDeliveryError } from '../../../src/accounts/sms/sms-sender.ts'

/**
 * For assert.rejects: the rejection is an SmsDeliveryError with these properties, and its
 * message contains none of `secrets` (the text, the code, credentials, the number).
 */
export function deliveryError(expected: { reason: string; retryable: boolean; message?: RegExp }, secrets: readonly string[]) {
  return (error: unknown) => {
    assert.ok(error instanceof SmsDeliveryError, String(error))
    assert.equal(error.code, 'SMS_DELIVERY_FAILED')
    assert.equal(error.reason, expected.reason)
    assert.equal(error.retryable, expected.retryable)
    if (expected.message) assert.match(error.message, expected.message)
    for (const secret of secrets) assert.ok(!error.message.includes(secret), `${secret} in "${error.message}"`)
    return true
  }
}
