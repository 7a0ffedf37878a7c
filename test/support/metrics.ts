/**
 * Reading Prometheus' text format in tests: a sample's value by name and labels, and the names
 * of the metrics a scrape exposes (a histogram's and summary's series under their family name).
 */

export interface Sample { name: string; labels: Record<string, string>; value: number }

/** Every sample of a scrape (comments skipped). */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!.replace(/\\(.)/g, '$1')
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

/**
 * The value of `name` with exactly these labels (others may be present on the sample only when
 * `partial`); undefined when no such series is exposed.
 */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels)
  const found = parseSamples(text).find((s) => s.name === name &&
    wanted.every(([k, v]) => s.labels[k] === v) && Object.keys(s.labels).length === wanted.length)
  return found?.value
}

/** The metric families a scrape declares (`# TYPE name type`), with their types. */
export function metricFamilies(text: string): Map<string, string> {
  const families = new Map<string, string>()
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(name!, type!)
  return families
}

/** Every series name a scrape can be queried by: each family, and a histogram's _bucket/_sum/_count, a summary's _sum/_count. */
export function queryableNames(text: string): Set<string> {
  const names = new Set<string>()
  for (const [name, type] of metricFamilies(text)) {
    names.add(name)
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix)
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix)
  }
  return names
}
