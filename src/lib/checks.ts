import type { FailureCode } from '../contract/failure-codes.ts'

/**
 * Verification pipelines are lists of small named checks run in order, so each pipeline
 * reads like the checklist it implements and reports which step failed and why.
 */
export class CheckFailed extends Error {
  /** Stable, machine-readable reason, e.g. WRONG_SIGNER: one of the contract's lists. */
  readonly code: FailureCode
  constructor(code: FailureCode, message: string) {
    super(message)
    this.name = 'CheckFailed'
    this.code = code
  }
}

/** Returned by a check that does not apply to this input (another branch of the pipeline): left out of the report. */
export const NOT_APPLICABLE: unique symbol = Symbol('not applicable')

export interface Check<C> {
  readonly name: string
  /** Throws CheckFailed to fail; may return a short detail for the step report, or NOT_APPLICABLE. */
  run(ctx: C): Promise<string | void | typeof NOT_APPLICABLE> | string | void | typeof NOT_APPLICABLE
}

export interface StepReport { name: string; ok: boolean; detail?: string }

export type CheckOutcome =
  | { ok: true; steps: StepReport[] }
  | { ok: false; code: FailureCode; message: string; failedStep: string; steps: StepReport[] }

export function check<C>(name: string, run: Check<C>['run']): Check<C> {
  return { name, run }
}

/**
 * Runs `checks` in order and stops at the first failure. Errors other than CheckFailed
 * (a database or ledger outage, a bug) propagate: they are not a verdict on the input.
 */
export async function runChecks<C>(checks: readonly Check<C>[], ctx: C): Promise<CheckOutcome> {
  const steps: StepReport[] = []
  for (const step of checks) {
    try {
      const detail = await step.run(ctx)
      if (detail === NOT_APPLICABLE) continue
      steps.push(detail ? { name: step.name, ok: true, detail } : { name: step.name, ok: true })
    } catch (err) {
      if (!(err instanceof CheckFailed)) throw err
      steps.push({ name: step.name, ok: false, detail: err.message })
      return { ok: false, code: err.code, message: err.message, failedStep: step.name, steps }
    }
  }
  return { ok: true, steps }
}
