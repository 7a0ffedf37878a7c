/**
 * Each operation of areas A and B (registration, approvals, caller verification, STIR/SHAKEN,
 * the embedded ledger): its request and answer schemas, each with one realistic example.
 * The routes take their schemas from here, so the OpenAPI document shows these examples
 * (test/http/openapi-examples.test.ts validates every one as Fastify validates requests).
 */
import { exemplified, exemplifiedParams } from './examples.ts'
import {
  ApprovalResponse, CallVerificationRequest, CallVerificationResponse, CancelRequest, CertificateFileParams, DetailsQuery, LedgerApproveRequest,
  LedgerApproveResponse, ObjectIdApprovalRequest, ObjectIdLookupRequest, ObjectIdLookupResponse, PhoneApprovalRequest, RegisterRequest,
  RegisterResponse, StirSigningRequest, StirSigningResponse, StirVerificationRequest, StirVerificationResponse, TransactionDetailsResponse,
  VerdictResponse, VerifySignatureRequest, VerifyTransactionRequest,
} from './api-schemas.ts'
import { Type } from 'typebox'

const TOKEN = '0x05e45600b08600d2ef8574501bb06f94de07c577abf572660492db6ccef02449'
const OWNER = '0x2a2743cb4e4def171097d642b347c8e2b5d4b6b220e31efa1915b6ff53d967a2'
const APPROVAL_NUMBER = '22c855f9b4801ff9e0d8c2ec'
const SIGNATURE = 'ADqekhg/RIXzP2YmPv8lkTGsOohSFiTSLxkg7WUACOD6Iph3v+4NHWkE1uSXSY0TIrXk6y9Od4MdhPSn4DxoHz+zmLCwXAjVvRC46GMnKf03iZYPvCmSzc9STKoMNZnr1g=='
/** A SHAKEN PASSporT as a SIP Identity header carries it (header, claims and signature, base64url). */
const PASSPORT = 'eyJhbGciOiJFUzI1NiIsInBwdCI6InNoYWtlbiIsInR5cCI6InBhc3Nwb3J0IiwieDV1IjoiaHR0cHM6Ly9rbnMuZXhhbXBsZS5jb20vc2hha2VuL2NlcnRzL2FjbWUtdm9pY2UucGVtIn0' +
  '.eyJhdHRlc3QiOiJBIiwiZGVzdCI6eyJ0biI6WyIxNDE1NTU1MDE5OSJdfSwiaWF0IjoxNzk1ODkyNDAwLCJvcmlnIjp7InRuIjoiMTQxNTU1NTAxMDAifSwib3JpZ2lkIjoiNjU1MDhiOTAtZjAxYy00YWJjLTkyZTAtZTg1Mzg3OTU0NWNjIn0' +
  '.LnhmICh7G2rgJRl-xRUm5VQkIYoLom4BzFCOm8d_lVGxS-Xo7DtBoIqDh2Nc_STvkT0L4L97s6wAtfiv_KeCSA'
const IDENTITY = `${PASSPORT};info=<https://kns.example.com/shaken/certs/acme-voice.pem>;alg=ES256;ppt=shaken`
const APPROVAL = {
  title: 'Confirm the transfer',
  message: 'Transfer of 250.00 EUR to the account ending 4821.\nNot you? Choose "This wasn\'t me".',
  successRedirectUrl: 'https://bank.example.com/transfers/8412/approved',
  cancelRedirectUrl: 'https://bank.example.com/transfers/8412/cancelled',
  referenceNumber: 'TRF-2026-008412',
  method: 'sign' as const,
}
const CREATED = { summary: 'A pending approval and the link to send the owner', value: { approvalUrl: `https://kns.example.com/approve?ref=${APPROVAL_NUMBER}`, approvalNumber: APPROVAL_NUMBER } }

/** POST /numsys/register-user-login */
export const RegisterUserLogin = {
  body: exemplified(RegisterRequest, { summary: 'A number and its owner\'s e-mail', value: { email: 'ana.garcia@example.com', phoneNumber: '+14155550100' } }),
  answer: exemplified(RegisterResponse, {
    summary: 'The number\'s stable user and zkLogin address',
    value: {
      success: true, message: 'user registered', userId: '8d0f4c7e-3b1a-4f59-9c2d-6e7a1b0c5d34',
      identifiers: [{ type: 'email', identifier: 'ana.garcia@example.com' }, { type: 'phone', identifier: '+14155550100' }], zkAddress: OWNER,
    },
  }),
}

/** POST /numsys/approval-phone */
export const ApprovalPhone = {
  body: exemplified(PhoneApprovalRequest, { summary: 'Ask the owner of +1 415 555 0100 to sign', value: { ...APPROVAL, phoneNumber: '+14155550100' } }),
  answer: exemplified(ApprovalResponse, CREATED),
}

/** POST /numsys/approval-object-id */
export const ApprovalObjectId = {
  body: exemplified(ObjectIdApprovalRequest, { summary: 'Ask the owner of a token for an on-ledger approval', value: { ...APPROVAL, method: 'event', objectId: TOKEN } }),
  answer: exemplified(ApprovalResponse, CREATED),
}

/** GET /numsys/transaction_details */
export const TransactionDetails = {
  querystring: exemplifiedParams(DetailsQuery, { ref: APPROVAL_NUMBER, wait: '30' }),
  answer: exemplified(TransactionDetailsResponse, {
    summary: 'A request the owner approved',
    value: {
      ...APPROVAL, objectId: TOKEN, approvalNumber: APPROVAL_NUMBER, createdAt: '2026-11-28T09:14:02.117Z', approved: true,
      phoneNumber: '+14155550100', wallet: OWNER, vendorBrand: 'Acme Bank', status: 'approved', expiresAt: '2026-11-28T09:24:02.117Z',
      signMessage: ['KNS approval request', 'Service: https://kns.example.com', `Approval number: ${APPROVAL_NUMBER}`, 'Vendor: Acme Bank',
        `Token: ${TOKEN}`, `Title: ${APPROVAL.title}`, `Message: ${APPROVAL.message}`].join('\n'),
      phoneLogin: false,
    },
  }),
}

const APPROVED = { summary: 'Verified: the request is approved', value: { success: true } }

/** POST /numsys/verify_signature */
export const VerifySignature = {
  body: exemplified(VerifySignatureRequest, { summary: 'The owner\'s signature over signMessage', value: { signature: SIGNATURE, approvalNumber: APPROVAL_NUMBER } }),
  answer: exemplified(VerdictResponse, APPROVED),
}

/** POST /numsys/verify_transaction */
export const VerifyTransaction = {
  body: exemplified(VerifyTransactionRequest, { summary: 'The digest of the owner\'s kns::approve transaction', value: { digest: 'AZdtrCL1xg2DoSuUMEX8GUNUrJtnxhauoeoobpAJgqNN', approvalNumber: APPROVAL_NUMBER } }),
  answer: exemplified(VerdictResponse, APPROVED),
}

/** POST /numsys/approval-cancel */
export const ApprovalCancel = {
  body: exemplified(CancelRequest, { summary: 'The owner did not make this request', value: { approvalNumber: APPROVAL_NUMBER, reason: 'not_me' } }),
  answer: exemplified(VerdictResponse, { summary: 'Cancelled', value: { success: true } }),
}

/** POST /numsys/call-signature-verification */
export const CallSignatureVerification = {
  body: exemplified(CallVerificationRequest, { summary: 'A call\'s PASSporT', value: { origTN: '+14155550100', destTN: '+14155550199', jwt: PASSPORT } }),
  answer: exemplified(CallVerificationResponse, {
    summary: 'Verified with the certificate its x5u names',
    value: { success: true, attestation: 'A', trust: 'x5u', spc: '1234', subject: 'CN=Acme Voice SHAKEN,O=Acme Voice,C=US', verstat: 'TN-Validation-Passed' },
  }),
}

/** POST /numsys/object-id-lookup */
export const ObjectIdLookup = {
  body: exemplified(ObjectIdLookupRequest, { summary: 'A registered number', value: { phoneNumber: '+14155550100' } }),
  answer: exemplified(ObjectIdLookupResponse, {
    summary: 'Its token and one linked registry',
    value: { objectId: TOKEN, registries: ['0x32e5555f7116980e12098f5d80cc741c31ce8fcc0cf9ab28cedb5ebeb5f06f99'] },
  }),
}

/** POST /stir/v1/verification */
export const StirVerification = {
  body: exemplified(StirVerificationRequest, {
    summary: 'The Identity header of an INVITE',
    value: { verificationRequest: { from: { tn: '14155550100' }, to: { tn: ['14155550199'] }, time: 1795892401, identity: IDENTITY } },
  }),
  answer: exemplified(StirVerificationResponse, { summary: 'Verified', value: { verificationResponse: { verstat: 'TN-Validation-Passed' } } }),
}

/** POST /stir/v1/signing */
export const StirSigning = {
  body: exemplified(StirSigningRequest, {
    summary: 'Sign an outgoing call with full attestation',
    value: { signingRequest: { orig: { tn: '14155550100' }, dest: { tn: ['14155550199'] }, attest: 'A', iat: 1795892400, origid: '65508b90-f01c-4abc-92e0-e853879545cc' } },
  }),
  answer: exemplified(StirSigningResponse, { summary: 'The Identity header to add to the INVITE', value: { signingResponse: { identity: IDENTITY } } }),
}

/** GET /shaken/certs/{file} */
export const CertificateFile = {
  params: exemplifiedParams(CertificateFileParams, { file: 'acme-voice.pem' }),
  answer: exemplified(Type.String({ description: 'PEM, leaf first' }), {
    summary: 'The chain, leaf first (shortened)',
    value: '-----BEGIN CERTIFICATE-----\nMIIB9TCCAZugAwIBAgIUYc3v...\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nMIIBxzCCAW2gAwIBAgIUQ0r1...\n-----END CERTIFICATE-----\n',
  }),
}

/** POST /ledger/v1/approve */
export const LedgerApprove = {
  body: exemplified(LedgerApproveRequest, { summary: 'The owner approves an `event` request', value: { objectId: TOKEN, ref: APPROVAL_NUMBER, signature: SIGNATURE } }),
  answer: exemplified(LedgerApproveResponse, { summary: 'The transaction, for verify_transaction', value: { digest: 'AZdtrCL1xg2DoSuUMEX8GUNUrJtnxhauoeoobpAJgqNN' } }),
}
