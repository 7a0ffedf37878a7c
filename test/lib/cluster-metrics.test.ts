/**
 * The machine's /metrics under `--workers` (src/lib/cluster-metrics.ts), in process: the sum of
 * the workers' series, whose counters never go back when a worker stalls (its last answer
 * counts), exits (its counts stay, its gauges go) or is replaced (the new one starts at 0).
 * The IPC around it is tested end to end in test/process/workers.test.ts.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { MachineSeries, type Series } from '../../src/lib/cluster-metrics.ts'

/** A worker's registry: a counter, a histogram, a gauge of its own and one read alike by all. */
function worker() {
  const registry = new Registry()
  return {
    requests: new Counter({ name: 'kns_requests_total', help: 'h', labelNames: ['route'] as const, registers: [registry] }),
    duration: new Histogram({ name: 'kns_duration_seconds', help: 'h', buckets: [0.1, 1], registers: [registry] }),
    inFlight: new Gauge({ name: 'kns_in_flight', help: 'h', registers: [registry] }),
    oldest: new Gauge({ name: 'kns_oldest_seconds', help: 'h', registers: [registry], aggregator: 'max' }),
    maxFds: new Gauge({ name: 'kns_process_max_fds', help: 'h', registers: [registry] }),
    // As it crosses the IPC channel: a copy (prom-client's own objects are live).
    series: async () => JSON.parse(JSON.stringify(await registry.getMetricsAsJSON())) as Series,
  }
}

function value(text: string, line: string): number | undefined {
  const match = new RegExp(`^${line.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(text)
  return match === null ? undefined : Number(match[1])
}

test('summed counters and histograms; gauges summed unless read alike (max); a per-process limit is not multiplied', async () => {
  const machine = new MachineSeries()
  const a = worker()
  const b = worker()
  a.requests.inc({ route: '/x' }, 5)
  b.requests.inc({ route: '/x' }, 3)
  b.requests.inc({ route: '/y' })
  a.duration.observe(0.05)
  b.duration.observe(0.5)
  a.inFlight.set(2)
  b.inFlight.set(3)
  a.oldest.set(40)
  b.oldest.set(41)
  a.maxFds.set(1024)
  b.maxFds.set(1024)
  machine.update(1, await a.series())
  machine.update(2, await b.series())
  const text = await machine.render(2, 2)
  assert.equal(value(text, 'kns_requests_total{route="/x"}'), 8)
  assert.equal(value(text, 'kns_requests_total{route="/y"}'), 1)
  assert.equal(value(text, 'kns_duration_seconds_count'), 2)
  assert.equal(value(text, 'kns_duration_seconds_bucket{le="0.1"}'), 1)
  assert.equal(value(text, 'kns_in_flight'), 5)
  assert.equal(value(text, 'kns_oldest_seconds'), 41)
  assert.equal(value(text, 'kns_process_max_fds'), 1024)
  assert.equal(value(text, 'kns_workers'), 2)
  assert.equal(value(text, 'kns_workers_reporting'), 2)
})

test('counters never go back: a silent worker counts with its last answer, an exited one leaves its counts, a new one starts at 0', async () => {
  const machine = new MachineSeries()
  const a = worker()
  const b = worker()
  a.requests.inc({ route: '/x' }, 5)
  b.requests.inc({ route: '/x' }, 3)
  b.inFlight.set(7)
  machine.update(1, await a.series())
  machine.update(2, await b.series())
  const seen: number[] = [value(await machine.render(2, 2), 'kns_requests_total{route="/x"}')!]

  // b stalls: only a answers.
  a.requests.inc({ route: '/x' }, 2)
  machine.update(1, await a.series())
  const stalled = await machine.render(2, 1)
  seen.push(value(stalled, 'kns_requests_total{route="/x"}')!)
  assert.equal(value(stalled, 'kns_workers_reporting'), 1)

  // b dies (after counting 4 more that no scrape saw: lost with it, as with any crash) and c replaces it.
  b.requests.inc({ route: '/x' }, 4)
  await machine.retire(2)
  const c = worker()
  machine.update(3, await c.series())
  const replaced = await machine.render(2, 2)
  seen.push(value(replaced, 'kns_requests_total{route="/x"}')!)
  assert.equal(value(replaced, 'kns_in_flight'), 0, 'the dead worker\'s gauges are gone')

  c.requests.inc({ route: '/x' })
  machine.update(3, await c.series())
  seen.push(value(await machine.render(2, 2), 'kns_requests_total{route="/x"}')!)
  // a dies too: two retirements add up.
  await machine.retire(1)
  seen.push(value(await machine.render(1, 1), 'kns_requests_total{route="/x"}')!)

  assert.deepEqual(seen, [8, 10, 10, 11, 11])
  await machine.retire(99) // one that never answered: nothing to keep
  assert.equal(value(await machine.render(1, 1), 'kns_requests_total{route="/x"}'), 11)
})
