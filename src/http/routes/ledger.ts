import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { LocalLedger } from '../../ledger/local-ledger.ts'
import { approveWithSignature } from '../../ledger/approve.ts'
import type { Service } from '../../service.ts'
import { publicRateLimit } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { LedgerApproveRequest, LedgerApproveResponse, withErrors } from '../../contract/api-schemas.ts'

/** Embedded-ledger operations over HTTP; registered only when LEDGER=local. */
export async function ledgerRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const ledger = service.ledger
  if (!(ledger instanceof LocalLedger)) return
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.post('/ledger/v1/approve', {
    onRequest: publicRateLimit(service),
    bodyLimit: BODY_LIMITS.text,
    schema: {
      tags: ['ledger'],
      summary: 'Embedded ledger: the token owner calls kns::approve(token, ref)',
      description: '`signature` is the owner\'s Sui personal-message signature over the text\n\n' +
        '    KNS embedded ledger: kns::approve\\nObject: <objectId>\\nRef: <ref>\n\n' +
        'Records a successful transaction emitting ApprovalEvent { object_id, ref } and returns its digest, ' +
        'for verify_transaction. 403 when the signer does not own the token; 404 for an unknown token.',
      body: LedgerApproveRequest,
      response: withErrors({ 200: LedgerApproveResponse }),
    },
  }, async (request) => approveWithSignature(ledger, request.body))
}
