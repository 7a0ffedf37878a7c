/**
 * Counts of events by a few labels whose values come from small fixed sets (a delivery kind, a
 * failure reason, a verstat): kept as plain numbers where the events happen, in the areas, and
 * read by /metrics (src/http/observability.ts), so no area depends on the metrics library.
 *
 * Label values must be bounded: a reason is one of a list, never an error's message. `known`
 * seeds combinations at 0, so that a rate over them exists before the first event (Prometheus'
 * `rate()` of a series that is absent is no series, and an alert on it never fires).
 */
export class Tally<L extends string> {
  readonly labels: readonly L[]
  readonly #counts = new Map<string, { values: Record<L, string>; count: number }>()

  constructor(labels: readonly L[], known: ReadonlyArray<Record<L, string>> = []) {
    this.labels = labels
    for (const values of known) this.add(values, 0)
  }

  add(values: Record<L, string>, n = 1): void {
    const key = this.labels.map((label) => values[label]).join('\0')
    const entry = this.#counts.get(key)
    if (entry === undefined) this.#counts.set(key, { values: { ...values }, count: n })
    else entry.count += n
  }

  /** One combination's count (0 when never seen). */
  get(values: Record<L, string>): number {
    return this.#counts.get(this.labels.map((label) => values[label]).join('\0'))?.count ?? 0
  }

  entries(): Array<{ values: Record<L, string>; count: number }> {
    return [...this.#counts.values()]
  }
}

/** Every combination of the labels' values (for `known`). */
export function combinations<L extends string>(values: { [K in L]: readonly string[] }): Array<Record<L, string>> {
  let out: Array<Record<string, string>> = [{}]
  for (const [label, options] of Object.entries(values) as Array<[L, readonly string[]]>) {
    out = out.flatMap((partial) => options.map((value) => ({ ...partial, [label]: value })))
  }
  return out as Array<Record<L, string>>
}
