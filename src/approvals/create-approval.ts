import { hash } from 'node:crypto'
import type { Database } from '../db/engine.ts'
import { ConflictError, NotFoundError } from '../errors.ts'
import { findByObjectId } from '../identity/numbers.ts'
import type { PhoneLinks } from '../identity/phone-links.ts'
import { canonicalPhone } from '../identity/phone.ts'
import type { Ledger } from '../ledger/ledger.ts'
import type { ApiKey } from '../keys/api-keys.ts'
import { randomHex } from '../lib/random-hex.ts'
import { findByReference, insertApproval, statusAt, type Approval, type Method } from './approval.ts'
import type { CreatedApproval } from '../contract/api-types.ts'

export interface ApprovalRequest {
  title: string
  message: string
  successRedirectUrl: string
  cancelRedirectUrl: string
  referenceNumber: string
  method: Method
  /** Exactly one of phoneNumber / objectId, by endpoint. */
  phoneNumber?: string
  objectId?: string
}

export interface CreateApprovalDeps {
  db: Database
  ledger: Ledger
  phoneLinks: PhoneLinks
  publicBaseUrl: string
  approvalTtlS: number
  /**
   * `async`: new approvals are written through `db.asyncCommit`, whose commit does not wait
   * for the disk. A pending approval lives minutes and a retry re-creates it, so losing the
   * last moment's worth in a database crash costs a retry; every decision on it commits
   * synchronously (and so makes it durable too).
   */
  approvalCommit: 'async' | 'sync'
}

/** The answer of approval-phone / approval-object-id: the contract's type. */
export type { CreatedApproval }

export function approvalUrl(publicBaseUrl: string, approvalNumber: string): string {
  return `${publicBaseUrl}/approve?ref=${approvalNumber}`
}

/** Fingerprint of what was asked, to tell a retry (same body) from a reuse (different body). */
function requestHash(request: ApprovalRequest): string {
  const canonical = JSON.stringify([request.title, request.message, request.successRedirectUrl, request.cancelRedirectUrl,
    request.referenceNumber, request.method, request.phoneNumber === undefined ? null : canonicalPhone(request.phoneNumber), request.objectId?.toLowerCase() ?? null])
  return hash('sha256', canonical, 'hex')
}

/** Resolves the request's number or object ID to the token and its number, checking the ledger. */
async function resolveToken(deps: CreateApprovalDeps, request: ApprovalRequest): Promise<{ objectId: string; phoneNumber: string | null }> {
  let objectId: string
  let phoneNumber: string | null
  if (request.phoneNumber !== undefined) {
    phoneNumber = canonicalPhone(request.phoneNumber)
    const link = await deps.phoneLinks.find(phoneNumber)
    if (link === null) throw new NotFoundError('this phone number has no number-system token', { field: 'phoneNumber' })
    objectId = link.objectId
  } else {
    objectId = request.objectId!.toLowerCase()
    phoneNumber = (await findByObjectId(deps.db, objectId))?.phone ?? null
  }
  const token = await deps.ledger.getToken(objectId)
  if (token === null) {
    throw new NotFoundError(`no number-system token ${objectId} on the ledger`, { field: request.phoneNumber !== undefined ? 'phoneNumber' : 'objectId' })
  }
  return { objectId, phoneNumber }
}

/**
 * Creates an approval request. Idempotent per (API key, referenceNumber): a retry with the
 * same body returns the same pending approval; a different body, or a retry after the first
 * one was decided or expired, is a conflict (a reference number names one request). The
 * token is resolved first, so a retry for a number that lost its token is a 404.
 */
export async function createApproval(deps: CreateApprovalDeps, key: ApiKey, request: ApprovalRequest): Promise<CreatedApproval> {
  const fingerprint = requestHash(request)
  let token = await resolveToken(deps, request)
  for (let attempt = 1; ; attempt++) {
    const approval = newApproval(deps, key, request, fingerprint, token)
    // The common case costs one statement; a retry (or a concurrent twin) finds the earlier one.
    if (await insertApproval(deps.approvalCommit === 'async' ? deps.db.asyncCommit : deps.db, approval)) {
      return { approvalNumber: approval.approvalNumber, approvalUrl: approvalUrl(deps.publicBaseUrl, approval.approvalNumber) }
    }
    const earlier = await findByReference(deps.db, key.id, request.referenceNumber)
    if (earlier !== null) return replay(deps, earlier, fingerprint)
    // Neither inserted nor there: the number's link moved since it was resolved (a cached
    // link another process changed a moment ago). Once more with the link read afresh.
    if (attempt > 1 || token.phoneNumber === null) {
      throw new ConflictError('referenceNumber is being used concurrently; retry', { field: 'referenceNumber' })
    }
    deps.phoneLinks.forget(token.phoneNumber)
    token = await resolveToken(deps, request)
  }
}

function newApproval(deps: CreateApprovalDeps, key: ApiKey, request: ApprovalRequest, fingerprint: string,
  token: { objectId: string; phoneNumber: string | null }): Approval {
  const now = Date.now()
  return {
    approvalNumber: randomHex(12),
    apiKeyId: key.id,
    vendorBrand: key.vendor,
    referenceNumber: request.referenceNumber,
    requestHash: fingerprint,
    title: request.title,
    message: request.message,
    successRedirectUrl: request.successRedirectUrl,
    cancelRedirectUrl: request.cancelRedirectUrl,
    method: request.method,
    objectId: token.objectId,
    phoneNumber: token.phoneNumber,
    status: 'pending',
    wallet: null,
    proof: null,
    createdAt: now,
    expiresAt: now + deps.approvalTtlS * 1000,
    decidedAt: null,
    cancelReason: null,
  }
}

function replay(deps: CreateApprovalDeps, earlier: Approval, fingerprint: string): CreatedApproval {
  if (earlier.requestHash !== fingerprint) {
    throw new ConflictError('referenceNumber was already used for a different approval request', { field: 'referenceNumber' })
  }
  const status = statusAt(earlier, Date.now())
  if (status !== 'pending') {
    throw new ConflictError(`the approval request with this referenceNumber is already ${status}; use a new referenceNumber`, { field: 'referenceNumber' })
  }
  return { approvalNumber: earlier.approvalNumber, approvalUrl: approvalUrl(deps.publicBaseUrl, earlier.approvalNumber) }
}
