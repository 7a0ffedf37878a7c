import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { findApproval, statusAt } from '../../approvals/approval.ts'
import { ConflictError, NotFoundError } from '../../errors.ts'
import { LocalLedger } from '../../ledger/local-ledger.ts'
import { approveWithSignature } from '../../ledger/approve.ts'
import type { Service } from '../../service.ts'
import { publicRateLimit } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { withErrors } from '../../contract/api-schemas.ts'
import { LedgerApprove } from '../../contract/api-operations.ts'

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
        'for verify_transaction. 403 when the signer does not own the token; 404 for an unknown token or a `ref` that is no approval ' +
        'request for it; 409 once the token has approved the ref (a replay) or when the request can no longer be approved.',
      body: LedgerApprove.body,
      response: withErrors({ 200: LedgerApprove.answer }),
    },
  }, async (request) => {
    // Only an open approval request of this token is approved: the route needs no key, and
    // a ref that names nothing would be a free row in the ledger's feed.
    const { objectId, ref } = request.body
    const approval = await findApproval(service.db, ref)
    if (approval === null || normalizeSuiAddress(approval.objectId) !== normalizeSuiAddress(objectId)) {
      throw new NotFoundError('no approval request with this ref for this token', { field: 'ref' })
    }
    const status = statusAt(approval, Date.now())
    if (status !== 'pending' && status !== 'approved') throw new ConflictError(`the approval request is ${status}`, { field: 'ref' })
    return approveWithSignature(ledger, request.body)
  })
}
