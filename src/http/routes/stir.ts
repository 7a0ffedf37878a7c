import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { NotFoundError, ValidationError } from '../../errors.ts'
import { signPassport } from '../../caller/shaken/sign-passport.ts'
import type { Service } from '../../service.ts'
import { API_KEY_SECURITY, publicRateLimit, requireScope } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import {
  CertificateFileParams, StirSigningRequest, StirSigningResponse, StirVerificationRequest, StirVerificationResponse, withErrors,
} from '../../contract/api-schemas.ts'
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

/** How far a signing request's iat may be from this server's clock: a signer does not backdate. */
const MAX_IAT_SKEW_S = 300

/** STI-AS (ATIS-1000082) and the public certificate chains the PASSporTs' x5u point at. */
export async function stirSigningRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.post('/stir/v1/signing', {
    onRequest: requireScope(service, 'signing'),
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: ['caller'],
      summary: 'STI-AS (ATIS-1000082): sign a SHAKEN PASSporT for an outgoing call',
      description: 'signingRequest {orig: {tn}, dest: {tn: [...]}, attest, iat, origid} -> signingResponse {identity}: the SIP Identity header, ' +
        'signed with the operator\'s credential (kns shaken credential add), x5u its public chain. 404 when no credential is configured; ' +
        '400 when several are and `credential` does not name one.',
      security: API_KEY_SECURITY,
      body: StirSigningRequest,
      response: withErrors({ 200: StirSigningResponse }),
    },
  }, async (request) => {
    const { orig, dest, attest, iat, origid, credential: named } = request.body.signingRequest
    if (Math.abs(iat - Date.now() / 1000) > MAX_IAT_SKEW_S) throw new ValidationError(`iat is more than ${MAX_IAT_SKEW_S} s from the server clock`, { field: 'signingRequest.iat' })
    const credentials = await service.shakenCredentials.all()
    let credential
    if (named !== undefined) credential = credentials.get(named)
    else if (credentials.size === 1) credential = [...credentials.values()][0]
    else if (credentials.size > 1) throw new ValidationError(`${credentials.size} signing credentials exist: name one in signingRequest.credential`, { field: 'signingRequest.credential' })
    if (credential === undefined) throw new NotFoundError(named === undefined ? 'no signing credential is configured (kns shaken credential add)' : `no signing credential ${named}`, { field: 'signingRequest.credential' })
    const digits = (tn: string) => (tn.startsWith('+') ? tn.slice(1) : tn)
    const { identity } = await signPassport(credential, { orig: digits(orig.tn), dest: dest.tn.map(digits), attest, iat, origid })
    return { signingResponse: { identity } }
  })

  app.get('/shaken/certs/:file', {
    onRequest: publicRateLimit(service),
    schema: {
      tags: ['caller'],
      summary: 'The public certificate chain of a signing credential (what its x5u can point at)',
      params: CertificateFileParams,
      response: withErrors({ 200: Type.String({ description: 'PEM, leaf first' }) }),
    },
  }, async (request, reply) => {
    const name = request.params.file.slice(0, -'.pem'.length)
    const credential = (await service.shakenCredentials.all()).get(name)
    if (credential === undefined) throw new NotFoundError(`no certificate ${request.params.file}`)
    reply.header('content-type', 'application/x-pem-file').header('cache-control', 'public, max-age=3600')
    return credential.chainPem
  })
}
