import type { Approval } from './approval.ts'

/**
 * The exact UTF-8 text a wallet signs as a Sui personal message to approve a `sign`
 * request. It binds the service, the approval number and the token, so a signature can
 * approve this one request and no other. The free-text message comes last because it is
 * the only field that may span several lines.
 */
export function signMessageFor(approval: Pick<Approval, 'approvalNumber' | 'vendorBrand' | 'objectId' | 'title' | 'message'>, serviceUrl: string): string {
  return [
    'KNS approval request',
    `Service: ${serviceUrl}`,
    `Approval number: ${approval.approvalNumber}`,
    `Vendor: ${approval.vendorBrand}`,
    `Token: ${approval.objectId}`,
    `Title: ${approval.title}`,
    `Message: ${approval.message}`,
  ].join('\n')
}

