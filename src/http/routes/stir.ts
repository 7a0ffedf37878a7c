import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ForbiddenError, NotFoundError, ValidationError } from '../../errors.ts'
import { decideDivSigning } from '../../caller/shaken/div-signing.ts'
import { checkSigningIat, signDivPassport, signPassport } from '../../caller/shaken/sign-passport.ts'
import { chooseCredential } from '../../caller/shaken/signing-authority.ts'
import type { Service } from '../../service.ts'
import { API_KEY_SECURITY, publicRateLimit, requireScope } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { withErrors } from '../../contract/api-schemas.ts'
import { CertificateFile, StirSigning, StirVerification } from '../../contract/api-operations.ts'

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
      body: StirVerification.body,
      response: withErrors({ 200: StirVerification.answer }),
    },
  }, async (request) => {
    const { from, to, time, identity } = request.body.verificationRequest
    if (Math.abs(time - Date.now() / 1000) > MAX_TIME_SKEW_S) {
      throw new ValidationError(`time is more than ${MAX_TIME_SKEW_S} s from the server clock`, { field: 'verificationRequest.time' })
    }
    const verdict = await service.callVerifier.verify({ origTN: from.tn, destTN: to.tn[0]!, jwt: '', identity, nowS: time })
    return {
      verificationResponse: {
        verstat: verdict.verstat,
        ...(verdict.sipReason === undefined ? {} : { reasoncode: verdict.sipReason.code, reasontext: verdict.sipReason.text }),
      },
    }
  })
}

/** STI-AS (ATIS-1000082) and the public certificate chains the PASSporTs' x5u point at. */
export async function stirSigningRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.post('/stir/v1/signing', {
    onRequest: requireScope(service, 'signing'),
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: ['caller'],
      summary: 'STI-AS (ATIS-1000082): sign a SHAKEN PASSporT for an outgoing call, or a div PASSporT for a diverted one',
      description: 'signingRequest {orig: {tn}, dest: {tn: [...]}, attest, iat, origid} -> signingResponse {identity}: the SIP Identity header, ' +
        'signed with one of the operator\'s credentials (kns shaken credential add), x5u its public chain. With ppt "div" and div {tn}: a div ' +
        'PASSporT (RFC 8946) for a call diverted from div.tn to dest (no attest, no origid), made only on top of the call\'s own PASSporT: `identity` (its ' +
        'Identity header or headers) must verify as a chain from orig to div.tn (403 otherwise), the destination must change and the chain with the new div ' +
        'be one a verifier accepts (400 otherwise), as the SIP interface does. RFC 8224 6.1: the API key must be bound to the ' +
        'credential (kns api-key create --credentials), may claim only its attestation levels and numbers, and the credential\'s certificate ' +
        '(TNAuthList) must cover the number signed for (orig; for div, div.tn): otherwise 403 FORBIDDEN, and nothing is signed. Without ' +
        '`credential`, the covering credential of the key is chosen (a TN-listing one before an SPC one); 400 when several cover it alike. ' +
        'A credential with a display name signs it as rich call data (rcd nam, RFC 9795).',
      security: API_KEY_SECURITY,
      body: StirSigning.body,
      response: withErrors({ 200: StirSigning.answer }),
    },
  }, async (request) => {
    const { orig, dest, attest, iat, origid, ppt, div, identity: callIdentity, credential: named } = request.body.signingRequest
    checkSigningIat(iat, Math.floor(Date.now() / 1000), service.config.callMaxAgeS, 'signingRequest.iat')
    const digits = (tn: string) => (tn.startsWith('+') ? tn.slice(1) : tn)
    const credentials = await service.shakenCredentials.all()
    const binding = request.apiKey!.signing
    if (ppt === 'div') {
      if (div === undefined) throw new ValidationError('a div PASSporT names the number the call was diverted from in div.tn', { field: 'signingRequest.div' })
      if (callIdentity === undefined) {
        throw new ValidationError('a div PASSporT is signed only on top of the call\'s verified Identity: give the call\'s Identity header(s) in signingRequest.identity', { field: 'signingRequest.identity' })
      }
      const credential = chooseCredential(credentials, binding, { signerTN: digits(div.tn), field: 'signingRequest.div.tn', ...(named === undefined ? {} : { named }) })
      // The rule of the SIP interface: a div only on top of the call's own PASSporT, verified.
      const decision = await decideDivSigning(service.callVerifier, {
        caller: digits(orig.tn), divertedFrom: digits(div.tn), dest: dest.tn.map(digits), identities: typeof callIdentity === 'string' ? [callIdentity] : callIdentity,
      })
      if (decision.kind === 'unverified') throw new ForbiddenError(decision.why, { field: 'signingRequest.identity' })
      if (decision.kind !== 'sign') throw new ValidationError(decision.why, { field: decision.kind === 'unchanged' ? 'signingRequest.dest' : 'signingRequest.identity' })
      const { identity } = await signDivPassport(credential, { orig: digits(orig.tn), div: digits(div.tn), dest: dest.tn.map(digits), iat })
      service.shakenCredentials.signed(credential, 'div')
      return { signingResponse: { identity } }
    }
    if (div !== undefined) throw new ValidationError('div belongs to a div PASSporT: set ppt to "div"', { field: 'signingRequest.div' })
    if (callIdentity !== undefined) throw new ValidationError('identity (the call\'s Identity headers) belongs to a div PASSporT: set ppt to "div"', { field: 'signingRequest.identity' })
    if (attest === undefined) throw new ValidationError('a shaken PASSporT needs attest (A, B or C)', { field: 'signingRequest.attest' })
    if (origid === undefined) throw new ValidationError('a shaken PASSporT needs origid (a UUID)', { field: 'signingRequest.origid' })
    const credential = chooseCredential(credentials, binding, { signerTN: digits(orig.tn), field: 'signingRequest.orig.tn', attest, ...(named === undefined ? {} : { named }) })
    const { identity } = await signPassport(credential, { orig: digits(orig.tn), dest: dest.tn.map(digits), attest, iat, origid })
    service.shakenCredentials.signed(credential, 'shaken')
    return { signingResponse: { identity } }
  })

  app.get('/shaken/certs/:file', {
    onRequest: publicRateLimit(service),
    schema: {
      tags: ['caller'],
      summary: 'The public certificate chain of a signing credential (what its x5u can point at)',
      params: CertificateFile.params,
      response: withErrors({ 200: CertificateFile.answer }),
    },
  }, async (request, reply) => {
    const name = request.params.file.slice(0, -'.pem'.length)
    const credential = (await service.shakenCredentials.all()).get(name)
    if (credential === undefined) throw new NotFoundError(`no certificate ${request.params.file}`)
    reply.header('content-type', 'application/x-pem-file').header('cache-control', 'public, max-age=3600')
    return credential.chainPem
  })
}
