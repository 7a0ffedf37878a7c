/**
 * The answer of an approval decision (verify_signature, verify_transaction, approval-cancel):
 * `{ success: true }`, or `{ success: false, code, error }` with a code of the contract's list.
 */
import { isApprovalFailure, type ApprovalFailure } from '../contract/failure-codes.ts'
import type { CheckOutcome } from '../lib/checks.ts'

export interface Verdict { success: boolean; code?: ApprovalFailure; error?: string }

export function failed(code: ApprovalFailure, error: string): Verdict {
  return { success: false, code, error }
}

/** A pipeline's outcome as a verdict. Its checks raise approval failures only; anything else is a bug, thrown. */
export function verdictOf(outcome: CheckOutcome): Verdict {
  if (outcome.ok) return { success: true }
  if (!isApprovalFailure(outcome.code)) throw new Error(`an approval pipeline failed with ${outcome.code}, not an approval failure code`)
  return failed(outcome.code, outcome.message)
}
