import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { registerOrLogin, registrationAnswerFloor } from '../../identity/register.ts'
import { addressGroup } from '../../lib/client-address.ts'
import type { Service } from '../../service.ts'
import { publicRateLimit } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { withErrors } from '../../contract/api-schemas.ts'
import { RegisterUserLogin } from '../../contract/api-operations.ts'

/** Who a registration is from, for its share of those in progress: its address group (the route takes no key). */
const registrationClient = (request: FastifyRequest): string => addressGroup(request.ip)

export async function identityRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  // One per server process: it follows the time this process's new registrations take.
  const answerFloor = registrationAnswerFloor()
  const { addressWorkers } = service

  app.post('/numsys/register-user-login', {
    // Before the body is read: a registration refused for load costs the least it can.
    onRequest: [publicRateLimit(service), async (request) => addressWorkers.refuseWhileSaturated(registrationClient(request))],
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: ['identity'],
      summary: 'Register a phone number, or log in to it',
      description: 'The same phone number always returns the same userId and zkAddress, and the same answer whether or not it was ' +
        'registered before: registering grants nothing. The account is controlled by whoever receives the one-time codes sent to the ' +
        'number (the login provider); the e-mail is kept unverified when the number is new and binds nothing otherwise. On first ' +
        'registration the ledger mints the number\'s KNS token to the zkAddress (embedded ledger; on Sui an operator links the token).',
      body: RegisterUserLogin.body,
      response: withErrors({ 200: RegisterUserLogin.answer }),
    },
  }, async (request) => {
    const result = await registerOrLogin({
      db: service.db,
      ledger: service.ledger,
      secret: service.secret,
      zkLoginIssuer: service.config.zkLoginIssuer,
      zkLoginClientId: service.config.zkLoginClientId,
      answerFloor,
      addressWorkers,
    }, request.body, registrationClient(request))
    return {
      success: true,
      message: 'user registered',
      userId: result.userId,
      identifiers: result.identifiers,
      zkAddress: result.zkAddress,
    }
  })
}
