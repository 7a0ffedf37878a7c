import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { consentAsked, grantConsent } from '../../accounts/consent.ts'
import { isDatabaseUnavailable } from '../../db/unavailable.ts'
import { NotFoundError, ValidationError } from '../../errors.ts'
import { canonicalPhone, maskPhone } from '../../identity/phone.ts'
import { MAX_EPOCH_UPPER_BOUND_DELTA } from '../../ledger/zklogin/verify-clear.ts'
import type { Service } from '../../service.ts'
import { perClientPerMinute, publicRateLimit } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { methodNotAllowed, trackRouteMethods } from '../transport.ts'
import { LOGIN_PAGE_FILE, pageHandler } from './pages.ts'
import { withErrors } from '../../contract/api-schemas.ts'
import { InteractionParams } from '../../contract/accounts-schemas.ts'
import {
  AbortLogin, CurrentEpoch, GiveConsent, InteractionInfo, LoginWithCode, SendLoginCode, ZkLoginProve, ZkLoginSalt,
} from '../../contract/accounts-operations.ts'

const ALL_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']
/** Per client address: salts and proofs are asked for once per login, not in loops. */
const SALT_PER_MINUTE = 20
const PROVE_PER_MINUTE = 10

/**
 * The login provider over HTTP: oidc-provider answers everything under the issuer's path
 * (discovery, JWKS, authorization, token, userinfo, logout), except the interaction, which is
 * ours: the login page and its JSON steps (send a code, check it; for a CAMARA client, consent
 * to what it asks about the number, and why). Then the zkLogin steps a
 * page or a wallet takes after logging in: the current epoch, the salt, the proof.
 */
export async function accountsRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { accounts } = service
  const mount = accounts.provider.mountPath
  const ipLimit = publicRateLimit(service)

  // oidc-provider reads its own bodies: hand the raw request over before Fastify parses anything.
  const interactionPaths = `${mount}/interaction/`
  const toProvider = async (request: FastifyRequest, reply: FastifyReply) => {
    // The interaction is ours (the routes below): a path under it that reached this catch-all has
    // no route, or none for this method, answered as on any other route.
    if (request.url.startsWith(interactionPaths)) throw methodNotAllowed(interactionMethods, request) ?? new NotFoundError(`no route ${request.method} ${request.url.split('?')[0]}`)
    reply.raw.setHeader('x-request-id', request.id)
    if (service.config.trustProxy !== false) {
      // What TRUST_PROXY derived, and only that: the provider believes this header (its URLs
      // come from the issuer, never from Host or X-Forwarded-Host: src/accounts/provider.ts).
      request.raw.headers['x-forwarded-for'] = request.ip
    }
    reply.hijack()
    accounts.provider.handle(request.raw, reply.raw)
  }
  for (const url of [mount, `${mount}/*`]) {
    app.route({ method: ALL_METHODS, url, onRequest: [ipLimit, toProvider], schema: { hide: true }, handler: async () => undefined })
  }
  // The methods of the routes below only (the catch-all above takes every method).
  const interactionMethods = trackRouteMethods(app)

  // The login page itself (web/login/): it runs the JSON steps below.
  app.get(`${mount}/interaction/:uid`, { onRequest: ipLimit, schema: { hide: true, params: InteractionParams } }, pageHandler(service, LOGIN_PAGE_FILE))

  const tags = ['login']
  /**
   * The interaction of this browser (its cookie) with this uid, or 404: expired, finished, or
   * another browser's. The database away while it is read is not "expired": that is a 503 with
   * Retry-After like everywhere else (a failover's 404 told a user mid-login to start again).
   */
  const interaction = async (request: { raw: FastifyRequest['raw']; params: { uid: string } }, reply: FastifyReply) => {
    try {
      const details = await accounts.provider.provider.interactionDetails(request.raw, reply.raw)
      if (details.uid !== request.params.uid) throw new Error('another interaction')
      return details
    } catch (err) {
      if (isDatabaseUnavailable(err)) throw err
      throw new NotFoundError('this login has expired or belongs to another browser: start again from the page that sent you here')
    }
  }

  app.get(`${mount}/interaction/:uid/details`, {
    onRequest: ipLimit,
    schema: { tags, summary: 'What the login asks (for the login page)', params: InteractionInfo.params, response: withErrors({ 200: InteractionInfo.answer }) },
  }, async (request, reply) => {
    const details = await interaction(request, reply)
    const clientId = String(details.params.client_id)
    const client = await accounts.clients.get(clientId)
    reply.header('cache-control', 'no-store')
    return {
      uid: details.uid, prompt: details.prompt.name, client: { clientId, name: client?.name ?? clientId },
      expiresAt: new Date(details.exp * 1000).toISOString(),
      ...(details.prompt.name === 'consent' ? { consent: consentAsked(details) } : {}),
    }
  })

  app.post(`${mount}/interaction/:uid/code`, {
    onRequest: ipLimit,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags, summary: 'Send a one-time code to the number',
      description: 'The same answer whether or not the number has an account (only then is a text sent). Limited per number and ' +
        'client address (and a cooldown between two), per number, per client address and per number prefix: 429 with Retry-After past them.',
      params: SendLoginCode.params, body: SendLoginCode.body, response: withErrors({ 202: SendLoginCode.answer }),
    },
  }, async (request, reply) => {
    const details = await interaction(request, reply)
    if (details.prompt.name !== 'login') throw new ValidationError('this login does not ask for a number')
    const phone = canonicalPhone(request.body.phoneNumber)
    const sent = await accounts.codes.send({ interactionUid: details.uid, phone, clientIp: request.ip })
    reply.header('cache-control', 'no-store')
    return reply.status(202).send({ sentTo: maskPhone(phone), ...sent })
  })

  app.post(`${mount}/interaction/:uid/login`, {
    onRequest: ipLimit,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags, summary: 'Log in with the code',
      description: '`redirectTo` continues the authorization. A wrong code uses one of its 5 tries (LOGIN_CODE_INVALID); an expired or used-up one is LOGIN_CODE_EXPIRED.',
      params: LoginWithCode.params, body: LoginWithCode.body, response: withErrors({ 200: LoginWithCode.answer }),
    },
  }, async (request, reply) => {
    const details = await interaction(request, reply)
    const { userId } = await accounts.codes.verify({ interactionUid: details.uid, code: request.body.code, clientIp: request.ip })
    const redirectTo = await accounts.provider.provider.interactionResult(request.raw, reply.raw, {
      login: { accountId: userId, amr: ['sms', 'otp'], remember: false },
    }, { mergeWithLastSubmission: false })
    reply.header('cache-control', 'no-store')
    return { redirectTo }
  })

  app.post(`${mount}/interaction/:uid/consent`, {
    onRequest: ipLimit,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags, summary: 'Allow or refuse what a CAMARA client asks (after logging in)',
      description: 'Only when the login asks for consent (`prompt: consent` in its details). `approve` grants the scopes and purpose the details listed; ' +
        '`deny` sends the client access_denied. `redirectTo` continues the authorization either way.',
      params: GiveConsent.params, body: GiveConsent.body, response: withErrors({ 200: GiveConsent.answer }),
    },
  }, async (request, reply) => {
    const details = await interaction(request, reply)
    if (consentAsked(details) === null) throw new ValidationError('this login does not ask for consent')
    const { provider } = accounts.provider
    const result = request.body.decision === 'approve'
      ? { consent: { grantId: await grantConsent(provider, details) } }
      : { error: 'access_denied', error_description: 'the user did not allow the client' }
    const redirectTo = await provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: true })
    reply.header('cache-control', 'no-store')
    return { redirectTo }
  })

  app.post(`${mount}/interaction/:uid/abort`, {
    onRequest: ipLimit,
    schema: { tags, summary: 'Give up logging in (the client hears access_denied)', params: AbortLogin.params, response: withErrors({ 200: AbortLogin.answer }) },
  }, async (request, reply) => {
    await interaction(request, reply)
    const redirectTo = await accounts.provider.provider.interactionResult(request.raw, reply.raw, {
      error: 'access_denied', error_description: 'the user gave up logging in',
    }, { mergeWithLastSubmission: false })
    return { redirectTo }
  })

  const zkTags = ['zklogin']
  app.get('/zklogin/v1/epoch', {
    onRequest: ipLimit,
    schema: { tags: zkTags, summary: 'The ledger\'s current epoch (for a zkLogin max epoch and nonce)', response: withErrors({ 200: CurrentEpoch.answer }) },
  }, async () => ({ epoch: await service.ledger.currentEpoch(), maxEpochAhead: MAX_EPOCH_UPPER_BOUND_DELTA }))

  app.post('/zklogin/v1/salt', {
    onRequest: ipLimit,
    preHandler: perClientPerMinute(service, 'salt', SALT_PER_MINUTE),
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: zkTags, summary: 'The user\'s zkLogin salt for an id_token of this provider',
      description: 'Mysten\'s salt service shapes: `{ token }` -> `{ salt }`. Only for a valid, unexpired id_token of this provider (INVALID_ID_TOKEN otherwise).',
      body: ZkLoginSalt.body, response: withErrors({ 200: ZkLoginSalt.answer }),
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    return accounts.salt(request.body.token)
  })

  app.post('/zklogin/v1/prove', {
    onRequest: ipLimit,
    preHandler: perClientPerMinute(service, 'prove', PROVE_PER_MINUTE),
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: zkTags, summary: 'A zkLogin proof for an id_token of this provider',
      description: 'The request and answer of Mysten\'s prover (`/v1`). With LEDGER=sui the proof comes from ZKLOGIN_PROVER_URL; ' +
        'on the embedded ledger (LEDGER=local) it is a development proof that only the embedded ledger accepts (docs/accounts.md).',
      body: ZkLoginProve.body, response: withErrors({ 200: ZkLoginProve.answer }),
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    return accounts.prove(service.ledger, request.body)
  })
}
