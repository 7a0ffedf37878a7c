/**
 * Every metric the Grafana dashboard (deploy/grafana/kns-dashboard.json) and the alert rules
 * (deploy/prometheus/kns-alerts.yml) query is one the service exposes (issue 33, item 3): a
 * renamed or removed metric would leave a panel empty and an alert that can never fire. The
 * app is started, exercised, and scraped; the names are read out of each PromQL expression.
 * A few metrics exist only in some configurations (LEDGER=sui, SIP_LISTEN); those must at least
 * be registered by the service's code under that name.
 */
import assert from 'node:assert/strict'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { parse } from 'yaml'
import { startHarness, type Harness } from '../helpers.ts'
import { queryableNames } from '../support/metrics.ts'
import { ROOT } from '../support/process.ts'
import { register } from '../support/kns.ts'

/** Metrics a default test server does not have, with the configuration that has them. */
const CONDITIONAL: Record<string, string> = {
  kns_ledger_requests_total: 'LEDGER=sui',
  kns_ledger_unavailable: 'LEDGER=sui',
  kns_sip_requests_total: 'SIP_LISTEN',
  kns_sip_dropped_total: 'SIP_LISTEN',
  kns_sip_in_flight: 'SIP_LISTEN',
  // Prometheus' own, for every target.
  up: 'Prometheus',
}

/** PromQL's words that are not metric names (functions are told by the `(` after them). */
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan', 'atan2'])

/**
 * The metric names an expression reads: identifiers left once strings, label matchers ({...}),
 * ranges and subqueries ([...]), label lists (by (...), on (...), ...) and numbers are set
 * aside, and that are neither a function or aggregation (followed by `(`) nor a keyword.
 */
function metricNames(expr: string): Set<string> {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, ' ')
  const names = new Set<string>()
  for (const match of stripped.matchAll(/(?<![\w.:$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = match
    if (call !== undefined || KEYWORDS.has(name!.toLowerCase())) continue
    names.add(name!)
  }
  return names
}

let h: Harness
let exposed: Set<string>

before(async () => {
  h = await startHarness({}, { events: true })
  await register(h)
  await h.app.inject({ method: 'GET', url: '/readyz' })
  exposed = queryableNames((await h.app.inject({ method: 'GET', url: '/metrics' })).body)
})
after(async () => { await h?.close() })

/** Every `expr` of the dashboard's panels (rows' nested panels too) and of the rules. */
function dashboardExpressions(): string[] {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy', 'grafana', 'kns-dashboard.json'), 'utf8')) as { panels: Array<{ panels?: unknown[]; targets?: Array<{ expr?: string }> }> }
  const panels = dashboard.panels.flatMap((p) => [p, ...((p.panels ?? []) as typeof dashboard.panels)])
  return panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr).filter((e): e is string => typeof e === 'string'))
}

function ruleExpressions(): string[] {
  const rules = parse(readFileSync(join(ROOT, 'deploy', 'prometheus', 'kns-alerts.yml'), 'utf8')) as { groups: Array<{ rules: Array<{ expr: string }> }> }
  return rules.groups.flatMap((g) => g.rules.map((r) => String(r.expr)))
}

/** The service's source, to find a conditional metric's registration. */
function sourceText(dir = join(ROOT, 'src')): string {
  return readdirSync(dir).map((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceText(path) : name.endsWith('.ts') ? readFileSync(path, 'utf8') : ''
  }).join('\n')
}

test('the PromQL reader finds metric names, and only them', () => {
  assert.deepEqual([...metricNames('sum by (le, route) (rate(kns_http_request_duration_seconds_bucket{job=~"$job", status=~"5.."}[$__rate_interval]))')],
    ['kns_http_request_duration_seconds_bucket'])
  assert.deepEqual([...metricNames('histogram_quantile(0.99, sum by (le) (rate(a_bucket[5m]))) > 0.5 and on (instance) b offset 1h unless c{x="y"} == bool 1e3')],
    ['a_bucket', 'b', 'c'])
  assert.deepEqual([...metricNames('label_replace(rate(x_total[1m]), "status_class", "${1}xx", "status", "(.)..") / ignoring(code) y')], ['x_total', 'y'])
  assert.deepEqual([...metricNames('topk(10, sum without (code) (rate(z[5m:1m])))')], ['z'])
})

test('every metric the dashboard and the alert rules query is one the service exposes', () => {
  const expressions = [...dashboardExpressions(), ...ruleExpressions()]
  assert.ok(expressions.length > 40, `${expressions.length} expressions`)
  const named = new Set(expressions.flatMap((e) => [...metricNames(e)]))
  // The reader sees the names this issue added (a reader that finds nothing would pass vacuously).
  for (const name of ['kns_sms_failed_total', 'kns_login_codes_refused_total', 'kns_call_verifications_total', 'kns_shaken_signatures_total', 'kns_webhook_failed_attempts_total', 'kns_database_state']) {
    assert.ok(named.has(name), `${name} is queried`)
  }
  const source = sourceText()
  const unknown: string[] = []
  for (const name of named) {
    if (exposed.has(name)) continue
    const condition = CONDITIONAL[name]
    if (condition === 'Prometheus') continue
    if (condition !== undefined && source.includes(`name: '${name}'`)) continue
    unknown.push(name)
  }
  assert.deepEqual(unknown, [], `queried but not exposed: ${unknown.join(', ')}`)
})
