import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { NotFoundError, ValidationError } from '../../errors.ts'
import { canonicalPhone } from '../../identity/phone.ts'
import type { Service } from '../../service.ts'
import { API_KEY_SECURITY, requireScope } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { withErrors } from '../../contract/api-schemas.ts'
import { CallSignatureVerification, ObjectIdLookup } from '../../contract/api-operations.ts'

export async function callerRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const guard = requireScope(service, 'caller')
  const directory = service.keyDirectory

  app.post('/numsys/call-signature-verification', {
    onRequest: guard,
    bodyLimit: BODY_LIMITS.text,
    schema: {
      tags: ['caller'],
      summary: 'Verify the identity header (PASSporT) of a call',
      description: 'Checks in order: check_jws_format (compact JWS, <= 8 KiB), check_header (alg exactly ES256; typ absent/JWT/passport; ' +
        'ppt absent/shaken; no unknown crit), check_claims (orig.tn = origTN, dest.tn (string or array) contains destTN, digits with or ' +
        'without +; att/attest A|B|C; origid; iat integer, <= 5 s ahead, not older than CALL_MAX_AGE_S), then the key from the trust sources ' +
        '(CALLER_TRUST, docs/shaken.md): resolve_keys (origTN -> token -> linked keystores -> unrevoked key named by kid/keyid, or up to 16 ' +
        'keys in turn) or, for an x5u PASSporT, fetch_certificate, check_certificate_chain, check_certificate_policy, check_tn_authorization, ' +
        'check_revocation; each followed by verify_signature (ES256, 64-byte r||s; DER rejected). An x5u PASSporT without kid whose certificate ' +
        'cannot verify it is tried with the ledger keys of origTN (`trust` says which source decided). Then check_rcd (RFC 9795 rich call data). ' +
        '`identity` (the SIP Identity header) may replace `jwt`; several Identity headers (a list) are a diverted call (RFC 8946): ' +
        'check_diversion_chain, the shaken PASSporT, then each div PASSporT (steps div[n].*, signed for the diverting number), and `div` ' +
        'reports each diversion. Every answer has verstat; a failure the RFC 8224 sipReason. A failed verification is 200 `{ success: false }`; ' +
        'a malformed body 400.',
      security: API_KEY_SECURITY,
      body: CallSignatureVerification.body,
      response: withErrors({ 200: CallSignatureVerification.answer }),
    },
  }, async (request) => {
    const { origTN, destTN, jwt, identity, debug } = request.body
    if ((jwt === undefined) === (identity === undefined)) throw new ValidationError('give exactly one of jwt and identity', { field: 'jwt' })
    const verdict = await service.callVerifier.verify({ origTN, destTN, jwt: jwt ?? '', ...(identity === undefined ? {} : { identity }) })
    const found = {
      ...(verdict.attestation === undefined ? {} : { attestation: verdict.attestation }),
      ...(verdict.trust === undefined ? {} : { trust: verdict.trust }),
      ...(verdict.spc === undefined ? {} : { spc: verdict.spc }),
      ...(verdict.subject === undefined ? {} : { subject: verdict.subject }),
      verstat: verdict.verstat,
      ...(verdict.sipReason === undefined ? {} : { sipReason: `${verdict.sipReason.code} ${verdict.sipReason.text}` }),
      ...(verdict.div === undefined ? {} : { div: verdict.div }),
      ...(verdict.rcd === undefined ? {} : { rcd: verdict.rcd }),
      ...(verdict.rcdFailure === undefined ? {} : { rcdFailure: verdict.rcdFailure }),
    }
    if (debug !== true) return { success: verdict.success, ...found }
    return { success: verdict.success, ...found, debug: verdict.reason === undefined ? { steps: verdict.steps } : { reason: verdict.reason, steps: verdict.steps } }
  })

  app.post('/numsys/object-id-lookup', {
    onRequest: guard,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: ['caller'],
      summary: 'The number-system token of a phone number and the certificate registries linked to it',
      description: '404 when the number has no token.',
      security: API_KEY_SECURITY,
      body: ObjectIdLookup.body,
      response: withErrors({ 200: ObjectIdLookup.answer }),
    },
  }, async (request) => {
    const resolution = await directory.resolve(canonicalPhone(request.body.phoneNumber))
    if (resolution.tokenId === null) throw new NotFoundError('this phone number has no number-system token', { field: 'phoneNumber' })
    return { objectId: resolution.tokenId, registries: resolution.keystoreIds }
  })
}
