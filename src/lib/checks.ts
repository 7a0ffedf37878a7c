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

/**
 * A check made of other checks (alternatives tried in turn): it reports their steps in place
 * of its own, passing (`Nested`) or failing (`NestedCheckFailed`).
 */
export class Nested {
  readonly steps: StepReport[]
  constructor(steps: StepReport[]) {
    this.steps = steps
  }
}

export class NestedCheckFailed extends CheckFailed {
  readonly steps: StepReport[]
  constructor(code: FailureCode, message: string, steps: StepReport[]) {
    super(code, message)
    this.steps = steps
  }
}

export interface Check<C> {
  readonly name: string
  /** Throws CheckFailed to fail; may return a short detail for the step report, or NOT_APPLICABLE. */
  run(ctx: C): Promise<CheckResult> | CheckResult
}

type CheckResult = string | void | typeof NOT_APPLICABLE | Nested

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
      if (detail instanceof Nested) {
        steps.push(...detail.steps)
        continue
      }
      steps.push(detail ? { name: step.name, ok: true, detail } : { name: step.name, ok: true })
    } catch (err) {
      if (!(err instanceof CheckFailed)) throw err
      if (err instanceof NestedCheckFailed) steps.push(...err.steps)
      else steps.push({ name: step.name, ok: false, detail: err.message })
      return { ok: false, code: err.code, message: err.message, failedStep: steps.at(-1)?.name ?? step.name, steps }
    }
  }
  return { ok: true, steps }
}
