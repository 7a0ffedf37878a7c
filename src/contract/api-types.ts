/**
 * The API's request and response types, derived from the TypeBox schemas (api-schemas.ts,
 * stats-schemas.ts) that also validate the requests and make the OpenAPI document: written
 * once. The pages import these as types only (`import type`), so nothing of TypeBox reaches
 * their bundles.
 */
import type { Static } from 'typebox'
import type {
  ApprovalResponse, CallVerificationRequest, CallVerificationResponse, ErrorBody, ObjectIdLookupResponse, RegisterResponse,
  TransactionDetailsResponse, VerdictResponse,
} from './api-schemas.ts'
import type { GatewayNode, GlobalStats, NsStats, RangeStats, WifiNode } from './stats-schemas.ts'

export type ApiError = Static<typeof ErrorBody>
export type Registered = Static<typeof RegisterResponse>
export type CreatedApproval = Static<typeof ApprovalResponse>
export type TransactionDetails = Static<typeof TransactionDetailsResponse>
export type ApprovalVerdict = Static<typeof VerdictResponse>
export type CallVerification = Static<typeof CallVerificationRequest>
export type CallVerdict = Static<typeof CallVerificationResponse>
export type ObjectIdLookup = Static<typeof ObjectIdLookupResponse>

export type GlobalStatsAnswer = Static<typeof GlobalStats>
export type RangeStatsAnswer = Static<typeof RangeStats>
export type NsStatsAnswer = Static<typeof NsStats>
export type GatewayNodeAnswer = Static<typeof GatewayNode>
export type WifiNodeAnswer = Static<typeof WifiNode>
