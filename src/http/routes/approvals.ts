import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { cancelApproval } from '../../approvals/cancel-approval.ts'
import { createApproval, type ApprovalRequest } from '../../approvals/create-approval.ts'
import { transactionDetails } from '../../approvals/transaction-details.ts'
import { verifySignature } from '../../approvals/verify-signature.ts'
import { verifyTransaction } from '../../approvals/verify-transaction.ts'
import type { ApiKey } from '../../keys/api-keys.ts'
import type { Service } from '../../service.ts'
import { API_KEY_SECURITY, publicRateLimit, requireScope } from '../auth.ts'
import { BODY_LIMITS } from '../json-body.ts'
import { withErrors } from '../../contract/api-schemas.ts'
import { ApprovalCancel, ApprovalObjectId, ApprovalPhone, TransactionDetails, VerifySignature, VerifyTransaction } from '../../contract/api-operations.ts'

const VERDICT_NOTE = 'A well-formed request that fails verification is answered 200 with `success: false`, `error` and `code`; ' +
  'a malformed one 400; an unknown approval number 404. Repeating a successful verification succeeds again.'

/** Where the contract is silent on durability: what this server's 200 promises (APPROVAL_COMMIT). */
function commitNote(commit: 'async' | 'sync'): string {
  return commit === 'sync'
    ? 'Durability: the new approval is committed durably before this answer.'
    : 'Durability: this server answers before the new approval is on the database\'s disk (APPROVAL_COMMIT=async, on PostgreSQL): ' +
      'a crash of the database server within about a second of this answer can lose it, and its link then answers 404; ' +
      'a retry with the same referenceNumber creates it anew. Any decision on it is committed durably, and makes it durable too.'
}

export async function approvalRoutes(fastify: FastifyInstance, { service }: { service: Service }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { config, db, ledger, phoneLinks } = service
  const createDeps = { db, ledger, phoneLinks, publicBaseUrl: config.publicBaseUrl, approvalTtlS: config.approvalTtlS, approvalCommit: config.approvalCommit }
  const guard = requireScope(service, 'approvals')
  const open = publicRateLimit(service)
  // The guard ran first, so the key is set.
  const create = (apiKey: ApiKey | null, body: ApprovalRequest) => createApproval(createDeps, apiKey!, body)

  app.post('/numsys/approval-phone', {
    onRequest: guard,
    bodyLimit: BODY_LIMITS.text,
    schema: {
      tags: ['approvals'],
      summary: 'Ask the owner of a phone number to approve an action',
      description: '404 when the number has no number-system token. Retrying with the same referenceNumber and body ' +
        'returns the same pending approval; a different body is a 409. ' + commitNote(config.approvalCommit),
      security: API_KEY_SECURITY,
      body: ApprovalPhone.body,
      response: withErrors({ 200: ApprovalPhone.answer }),
    },
  }, async (request) => create(request.apiKey, request.body))

  app.post('/numsys/approval-object-id', {
    onRequest: guard,
    bodyLimit: BODY_LIMITS.text,
    schema: {
      tags: ['approvals'],
      summary: 'Ask the owner of a number-system token to approve an action',
      description: '404 when the token does not exist on the ledger. Same retry rules as approval-phone. ' + commitNote(config.approvalCommit),
      security: API_KEY_SECURITY,
      body: ApprovalObjectId.body,
      response: withErrors({ 200: ApprovalObjectId.answer }),
    },
  }, async (request) => create(request.apiKey, request.body))

  app.get('/numsys/transaction_details', {
    onRequest: open,
    schema: {
      tags: ['approvals'],
      summary: 'The state of an approval request',
      description: '`ref` is the approval number. `wallet` is the token owner who must approve, then the address that did. ' +
        'No key: the approval number (96 random bits) is the capability, as in the approval URL.',
      querystring: TransactionDetails.querystring,
      response: withErrors({ 200: TransactionDetails.answer }),
    },
  }, async (request) => {
    const deps = { db, ledger, serviceUrl: config.publicBaseUrl }
    const { ref } = request.query
    // Shortened to WAIT_MAX_S (e.g. below a proxy's read timeout).
    const wait = Math.min(Number(request.query.wait ?? 0), config.waitMaxS)
    if (wait === 0) return transactionDetails(deps, ref)
    return waitForDecision(service, request, () => transactionDetails(deps, ref), ref, wait * 1000)
  })

  app.post('/numsys/verify_signature', {
    onRequest: open,
    bodyLimit: BODY_LIMITS.text,
    schema: {
      tags: ['approvals'],
      summary: 'Approve a `sign` request with the owner\'s personal-message signature over `signMessage`',
      description: VERDICT_NOTE,
      body: VerifySignature.body,
      response: withErrors({ 200: VerifySignature.answer }),
    },
  }, async (request) => verifySignature({
    db, ledger, now: Date.now(), serviceUrl: config.publicBaseUrl,
    approvalNumber: request.body.approvalNumber, signature: request.body.signature,
  }))

  app.post('/numsys/verify_transaction', {
    onRequest: open,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: ['approvals'],
      summary: 'Approve an `event` request with the digest of the owner\'s `kns::approve` transaction',
      description: VERDICT_NOTE,
      body: VerifyTransaction.body,
      response: withErrors({ 200: VerifyTransaction.answer }),
    },
  }, async (request) => verifyTransaction({
    db, ledger, now: Date.now(), approvalNumber: request.body.approvalNumber, digest: request.body.digest,
  }))

  app.post('/numsys/approval-cancel', {
    onRequest: open,
    bodyLimit: BODY_LIMITS.small,
    schema: {
      tags: ['approvals'],
      summary: 'Extension: the owner declines the request (approval page "Deny" or "This wasn\'t me")',
      description: 'pending -> cancelled, with the reason (transaction_details `cancelReason`, the `approval.cancelled` event\'s data); ' +
        'idempotent, the first reason stays. An approved or expired request answers `success: false`.',
      body: ApprovalCancel.body,
      response: withErrors({ 200: ApprovalCancel.answer }),
    },
  }, async (request) => cancelApproval(db, request.body.approvalNumber, request.body.reason))
}

/**
 * Answers when the approval is decided or `ms` have passed. The waiter is registered before
 * the first read, so a decision between the two is not missed; an expiry due sooner than `ms`
 * ends the wait then (expiry is a decision no one signals). Nothing is held while waiting but
 * a timer: no database connection. A client that goes away stops its wait.
 */
async function waitForDecision<T extends { status: string; expiresAt: string }>(
  service: Service, request: FastifyRequest, read: () => Promise<T>, ref: string, ms: number,
): Promise<T> {
  const waiters = service.decisionWaiters
  if (waiters.full) return read() // past the per-process bound: answer at once rather than hold more
  const deadline = Date.now() + ms
  let waiter = waiters.waitFor(ref, ms)
  let gone = false
  const stop = () => { gone = true; waiter.cancel() }
  request.raw.once('close', stop)
  try {
    for (;;) {
      const current = await read()
      const left = deadline - Date.now()
      if (current.status !== 'pending' || left <= 0 || gone || waiters.closed) return current
      // A wake-up is a hint, not a verdict (a lost LISTEN wakes everyone): wait again until
      // the deadline, or the expiry when it comes first. Registered before the waiter it
      // replaces is dropped, so no decision falls in between.
      const untilExpiry = Date.parse(current.expiresAt) - Date.now() + EXPIRY_MARGIN_MS
      const next = waiters.waitFor(ref, Math.min(left, untilExpiry))
      const missed = waiter.settled // woken between our read and now: read again at once
      waiter.cancel()
      waiter = next
      if (!missed) await waiter.done
      if (gone) return current // nobody to answer: no read for nobody
    }
  } finally {
    waiter.cancel()
    request.raw.off('close', stop)
  }
}

/** Read just after the expiry instant, so the answer says `expired`. */
const EXPIRY_MARGIN_MS = 20

