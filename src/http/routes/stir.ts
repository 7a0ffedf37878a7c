import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ValidationError } from '../../errors.ts'
import type { Service } from '../../service.ts'
import { API_KEY_SECURITY, requireScope } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { StirVerificationRequest, StirVerificationResponse, withErrors } from '../../contract/api-schemas.ts'
import { verifyCallFor } from './caller.ts'

/** How far the INVITE's `time` may be from this server's clock. */
const MAX_TIME_SKEW_S = 300

/**
 * The REST interface SBCs already speak to an external STI-VS (ATIS-1000082): the same
 * verification pipeline as call-signature-verification, in their request and answer shapes.
 */
export async function stirRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.post('/stir/v1/verification', {
    onRequest: requireScope(service, 'caller'),
    bodyLimit: BODY_LIMITS.text,
    schema: {
      tags: ['caller'],
      summary: 'STI-VS (ATIS-1000082): verify the Identity header of an INVITE',
      description: 'verificationRequest {from: {tn}, to: {tn: [...]}, time, identity} -> verificationResponse {verstat, reasoncode?, reasontext?}. ' +
        'The checks of call-signature-verification, with origTN = from.tn and destTN = to.tn[0], judged at `time` (which must be within 5 minutes of the server clock). ' +
        'A failed verification is 200 with TN-Validation-Failed (or No-TN-Validation) and the RFC 8224 reason; a malformed request 400.',
      security: API_KEY_SECURITY,
      body: StirVerificationRequest,
      response: withErrors({ 200: StirVerificationResponse }),
    },
  }, async (request) => {
    const { from, to, time, identity } = request.body.verificationRequest
    if (Math.abs(time - Date.now() / 1000) > MAX_TIME_SKEW_S) {
      throw new ValidationError(`time is more than ${MAX_TIME_SKEW_S} s from the server clock`, { field: 'verificationRequest.time' })
    }
    const verdict = await verifyCallFor(service, { origTN: from.tn, destTN: to.tn[0]!, jwt: '', identity, nowS: time })
    return {
      verificationResponse: {
        verstat: verdict.verstat,
        ...(verdict.sipReason === undefined ? {} : { reasoncode: verdict.sipReason.code, reasontext: verdict.sipReason.text }),
      },
    }
  })
}
