/**
 * The public network explorer (GET /): all-time figures and the nodes online, a period driving
 * the gateway, WiFi and sign-up charts (each total against the period before), a world map, a
 * searchable table of the nodes and a page per node. Refreshes itself every minute while shown.
 * Everything from the public statistics endpoints (docs/stats.md); all text is set with textContent.
 */
import '../shared/base.css'
import './explorer.css'
import { ApiError, getJson, postJson } from '../shared/api.ts'
import { areaChart, stackedBars } from './charts.ts'
import {
  byteUnitFor, countryName, customPeriod, describePeriod, formatChange, formatData, formatDecimal, formatInt, presetPeriod, previousLabel,
  previousPeriod, type Period, type Preset,
} from './format.ts'
import { emptyRow, nodeHref, setNodes, showNodePage, wireNodeTable } from './node-table.ts'
import { toMapNodes, type MapNode, type WifiNodeJson } from './nodes.ts'
import type { GlobalStatsAnswer, NsStatsAnswer, RangeStatsAnswer } from '../../src/contract/api-types.ts'

/** The statistics endpoints' answers: the API's own types. */
type GlobalStats = GlobalStatsAnswer
type RangeStats = RangeStatsAnswer
type NsStats = NsStatsAnswer

const API = '/api/v1'
/** How often a shown page refreshes itself (a hidden tab waits until it is shown again). */
const REFRESH_MS = 60_000
/** Countries drawn separately in the sign-up chart; the rest are stacked as "Other". */
const TOP_COUNTRIES = 6

/** The map (d3-geo and the world outline) is its own chunk, fetched while the statistics load. */
const mapModule = import('./map.ts')
mapModule.catch(() => {}) // a failure is reported where it is awaited (renderMap)

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T
const main = $('main')

const state = {
  preset: '30d' as Preset | 'custom',
  period: presetPeriod('30d', Date.now()),
  /** Increases with every period load: answers of an older one are dropped. */
  generation: 0,
  wifiNodes: null as WifiNodeJson[] | null,
  nodes: [] as MapNode[],
  /** What the map was drawn from: a refresh redraws it (and loses its zoom) only when a node changed. */
  mapDrawnFor: '',
  global: null as GlobalStats | null,
  lastLoad: 0,
  /** The period on screen as it would be now (null: it does not move, a custom period in the past). */
  shown: (() => presetPeriod('30d', Date.now())) as () => Period | null,
  totalNS: null as number | null,
}

function setFigure(id: string, text: string, value: number): void {
  const el = $(id)
  el.textContent = text
  el.dataset['value'] = String(value)
  el.classList.remove('loading')
}

function showError(err: unknown): void {
  $('error-text').textContent = err instanceof ApiError ? err.message : 'Something went wrong while loading the statistics.'
  $('error').hidden = false
}

function updateEmpty(): void {
  const g = state.global
  const empty = g !== null && state.totalNS !== null && state.wifiNodes !== null &&
    g.totalSessions === 0 && state.totalNS === 0 && state.nodes.length === 0
  $('empty').hidden = !empty
  main.classList.toggle('is-empty', empty)
}

/** All-time figures: global-public-stats and the sign-up total (totalNS of a period ending now). */
async function loadFigures(): Promise<void> {
  const now = Date.now()
  const [global, ns] = await Promise.all([
    getJson<GlobalStats>(`${API}/UsageGraph/global-public-stats`),
    postJson<NsStats>(`${API}/UsageGraph/global-public-ns-stats`, presetPeriod('24h', now)),
  ])
  state.global = global.body
  state.totalNS = ns.body.totalNS
  setFigure('fig-clients', formatInt(global.body.totalUniqueClients), global.body.totalUniqueClients)
  setFigure('fig-gb', formatData(global.body.totalGB * 1000), global.body.totalGB)
  setFigure('fig-sessions', formatInt(global.body.totalSessions), global.body.totalSessions)
  setFigure('fig-ns', formatInt(ns.body.totalNS), ns.body.totalNS)
}

function setTotal(key: string, text: string): void {
  const el = document.querySelector<HTMLElement>(`[data-total="${key}"]`)
  if (el !== null) el.textContent = text
}

/** Whether the last bucket of `series` reaches past the period's end (not finished yet). */
function lastBucketPartial(series: number[][], period: Period): boolean {
  const last = series.at(-1)?.[0]
  const step = series.length > 1 ? series[1]![0]! - series[0]![0]! : undefined
  return last !== undefined && step !== undefined && last + step > Date.parse(period.end)
}

/** A period total's change against the period before, with what it is measured against. */
function setChange(key: string, current: number, previous: number, period: Period): void {
  const el = document.querySelector<HTMLElement>(`[data-change="${key}"]`)
  if (el === null) return
  const change = formatChange(current, previous)
  el.textContent = change === '' ? '' : `${change} vs ${previousLabel(Date.parse(period.end) - Date.parse(period.start))}`
  el.dataset['trend'] = change.startsWith('▲') ? 'up' : change.startsWith('▼') ? 'down' : 'flat'
}

function renderNetwork(network: 'gateway' | 'wifi', stats: RangeStats, before: RangeStats, period: Period): void {
  const p = stats.periodUsage
  const q = before.periodUsage
  setTotal(`${network}-mb`, formatData(p.currentUsageMB))
  setTotal(`${network}-clients`, formatInt(p.currentClients))
  setTotal(`${network}-sessions`, formatInt(p.currentSessions))
  setChange(`${network}-mb`, p.currentUsageMB, q.currentUsageMB, period)
  setChange(`${network}-clients`, p.currentClients, q.currentClients, period)
  setChange(`${network}-sessions`, p.currentSessions, q.currentSessions, period)
  const name = network === 'gateway' ? 'Gateways' : 'WiFi'
  const partial = { partial: lastBucketPartial(p.sessions, period) }
  // One unit for the whole chart, the largest its peak allows (TB for a busy year, not millions of MB).
  const { unit, perMB } = byteUnitFor(Math.max(0, ...p.dataUsageMB.map((point) => point[1] ?? 0)))
  const caption = $(`chart-${network}-data`).previousElementSibling
  if (caption !== null) caption.textContent = `Data usage (${unit})`
  areaChart($(`chart-${network}-data`), p.dataUsageMB.map(([t, v]) => [t!, v! / perMB]), `${name} data usage`, unit,
    { ...partial, format: (v) => `${formatDecimal(v)} ${unit}` })
  // Clients per bucket are that bucket's unique clients: they overlap, so no total is added up.
  areaChart($(`chart-${network}-clients`), p.clients, `${name} clients`, 'clients',
    { ...partial, additive: false, format: (v) => `${formatInt(v)} unique clients` })
  areaChart($(`chart-${network}-sessions`), p.sessions, `${name} sessions`, 'sessions', { ...partial, format: (v) => `${formatInt(v)} sessions` })
}

function renderSignups(ns: NsStats, before: NsStats, period: Period): void {
  const { ts, perCountry, ns: inPeriod } = ns.periodUsage
  setTotal('ns-period', formatInt(inPeriod))
  setChange('ns-period', inPeriod, before.periodUsage.ns, period)
  setTotal('ns-total', formatInt(ns.totalNS))
  const sums = Object.entries(perCountry).map(([code, values]) => ({ code, values, sum: values.reduce((a, b) => a + b, 0) }))
    .sort((a, b) => b.sum - a.sum || a.code.localeCompare(b.code))
  const stacks = sums.slice(0, TOP_COUNTRIES).map((c) => ({ key: c.code, name: countryName(c.code), values: c.values }))
  const rest = sums.slice(TOP_COUNTRIES)
  if (rest.length > 0) {
    stacks.push({ key: 'other', name: `Other (${rest.length})`, values: ts.map((_, i) => rest.reduce((s, c) => s + (c.values[i] ?? 0), 0)) })
  }
  stackedBars($('chart-ns'), ts, stacks, 'Sign-ups per country', { partial: lastBucketPartial(ts.map((t) => [t]), period), format: formatInt })
  $('ns-legend').replaceChildren(...stacks.map((st, k) => {
    const li = document.createElement('li')
    const key = document.createElement('span')
    key.className = `key s${k}`
    key.setAttribute('aria-hidden', 'true')
    li.append(key, st.name)
    return li
  }))
  const inPeriodBy = new Map(sums.map((c) => [c.code, c.sum]))
  const rows = Object.entries(ns.totalPerCountry).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
  const body = $<HTMLTableElement>('country-table').tBodies[0]!
  body.replaceChildren(...rows.map(([code, total]) => {
    const tr = document.createElement('tr')
    tr.dataset['country'] = code
    for (const [text, cls] of [[countryName(code), ''], [formatInt(inPeriodBy.get(code) ?? 0), 'num'], [formatInt(total), 'num']] as const) {
      const td = document.createElement('td')
      td.textContent = text
      if (cls !== '') td.className = cls
      tr.append(td)
    }
    return tr
  }))
  if (rows.length === 0) body.append(emptyRow(3, 'No sign-ups yet'))
}

async function renderMap(): Promise<void> {
  const drawnFor = JSON.stringify(state.nodes)
  if (drawnFor === state.mapDrawnFor) return
  const box = $('map')
  const { drawMap } = await mapModule
  drawMap(box, $('map-tip'), state.nodes, { nodeHref })
  state.mapDrawnFor = drawnFor
  box.classList.remove('loading')
}

/** Nodes and the share online, beside the all-time figures. */
function renderNodeFigures(): void {
  const online = state.nodes.filter((n) => n.status === 'Online').length
  setFigure('fig-nodes', formatInt(state.nodes.length), state.nodes.length)
  setFigure('fig-online', state.nodes.length === 0 ? '0' : `${formatInt(online)} (${Math.round((online / state.nodes.length) * 100)}%)`, online)
}

function markUpdated(): void {
  state.lastLoad = Date.now()
  const time = document.createElement('time')
  time.dateTime = new Date(state.lastLoad).toISOString()
  time.textContent = new Date(state.lastLoad).toLocaleTimeString('en-GB', { timeZone: 'UTC' })
  $('updated').replaceChildren('Updated ', time, ' UTC · refreshes every minute')
}

function setLoading(on: boolean): void {
  main.setAttribute('aria-busy', String(on))
  $('loading-label').textContent = on ? 'Loading the statistics…' : 'Statistics loaded.'
  for (const el of document.querySelectorAll('.chart-box')) el.classList.toggle('loading', on)
}

/**
 * The period's statistics and those of the period of the same length before it (for the
 * changes), in parallel. `quiet`: a refresh, drawn over the old figures without the loading state.
 */
async function loadPeriod(period: Period, quiet = false): Promise<void> {
  const generation = ++state.generation
  if (!quiet) setLoading(true)
  $('error').hidden = true
  const before = previousPeriod(period)
  try {
    const [gateway, wifi, ns, gatewayBefore, wifiBefore, nsBefore, wifiNodes] = await Promise.all([
      postJson<RangeStats>(`${API}/UsageGraph/global-public-gateway-stats`, period),
      postJson<RangeStats>(`${API}/UsageGraph/global-public-wifi-stats`, period),
      postJson<NsStats>(`${API}/UsageGraph/global-public-ns-stats`, period),
      postJson<RangeStats>(`${API}/UsageGraph/global-public-gateway-stats`, before),
      postJson<RangeStats>(`${API}/UsageGraph/global-public-wifi-stats`, before),
      postJson<NsStats>(`${API}/UsageGraph/global-public-ns-stats`, before),
      state.wifiNodes === null || quiet ? postJson<WifiNodeJson[]>(`${API}/Wifi/wifi-nodes`, {}).then((r) => r.body) : Promise.resolve(state.wifiNodes),
    ])
    if (generation !== state.generation) return
    state.wifiNodes = wifiNodes
    renderNetwork('gateway', gateway.body, gatewayBefore.body, period)
    renderNetwork('wifi', wifi.body, wifiBefore.body, period)
    renderSignups(ns.body, nsBefore.body, period)
    const series = gateway.body.periodUsage.sessions
    const step = series.length > 1 ? series[1]![0]! - series[0]![0]! : ns.body.periodUsage.ts.length > 1 ? ns.body.periodUsage.ts[1]! - ns.body.periodUsage.ts[0]! : 3_600_000
    $('period-label').textContent = series.length === 0 ? '' : describePeriod(period, step, Date.now())
    state.nodes = toMapNodes(gateway.body.periodUsage.gatewayNodes, wifiNodes)
    setNodes(state.nodes)
    renderNodeFigures()
    updateEmpty()
    setLoading(false)
    markUpdated()
    await renderMap()
  } catch (err) {
    if (generation !== state.generation) return
    setLoading(false)
    showError(err)
  }
}

function selectPreset(preset: Preset | 'custom'): void {
  state.preset = preset
  for (const chip of document.querySelectorAll<HTMLButtonElement>('[data-preset]')) {
    chip.setAttribute('aria-pressed', String(chip.dataset['preset'] === preset))
  }
  $('custom').hidden = preset !== 'custom'
  if (preset === 'custom') {
    const start = $<HTMLInputElement>('custom-start')
    const end = $<HTMLInputElement>('custom-end')
    if (start.value === '') start.value = state.period.start.slice(0, 10)
    if (end.value === '') end.value = state.period.end.slice(0, 10)
    start.focus()
    return
  }
  state.shown = () => presetPeriod(preset, Date.now())
  state.period = presetPeriod(preset, Date.now())
  void loadPeriod(state.period)
}

function applyCustom(): void {
  const today = new Date().toISOString().slice(0, 10)
  const from = $<HTMLInputElement>('custom-start').value
  const to = $<HTMLInputElement>('custom-end').value || today
  const result = customPeriod(from, to, Date.now())
  $('custom-error').textContent = typeof result === 'string' ? result : ''
  if (typeof result === 'string') return
  // A custom period that reaches today grows with the refresh; one in the past is final.
  state.shown = () => {
    const again = customPeriod(from, to, Date.now())
    return typeof again === 'string' || again.end === state.period.end ? null : again
  }
  state.period = result
  void loadPeriod(result)
}

async function start(): Promise<void> {
  $('error').hidden = true
  const today = new Date().toISOString().slice(0, 10)
  $<HTMLInputElement>('custom-start').max = today
  $<HTMLInputElement>('custom-end').max = today
  await Promise.all([loadFigures().then(updateEmpty).catch(showError), loadPeriod(state.period)])
  if (location.hash.startsWith('#node=')) showNodePage(true)
}

/**
 * Figures, and the period on screen when it reaches now, brought up to date (what is shown, not
 * the chip pressed: "Custom" open but not applied still shows the preset). A period in the past
 * does not change; the figures still do.
 */
function refresh(): void {
  state.lastLoad = Date.now()
  void loadFigures().then(updateEmpty).then(markUpdated).catch(() => {})
  const next = state.shown()
  if (next !== null) {
    state.period = next
    void loadPeriod(next, true)
  }
}

for (const chip of document.querySelectorAll<HTMLButtonElement>('[data-preset]')) {
  chip.addEventListener('click', () => selectPreset(chip.dataset['preset'] as Preset | 'custom'))
}
$('custom-apply').addEventListener('click', applyCustom)
for (const id of ['custom-start', 'custom-end']) {
  $(id).addEventListener('keydown', (e) => { if (e.key === 'Enter') applyCustom() })
}
wireNodeTable()
$('retry').addEventListener('click', () => { void start() })
// Only once something has loaded: a slow first load is not abandoned for a refresh.
setInterval(() => {
  if (document.visibilityState === 'visible' && state.lastLoad > 0 && Date.now() - state.lastLoad >= REFRESH_MS - 1000) refresh()
}, 5000)
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && state.lastLoad > 0 && Date.now() - state.lastLoad >= REFRESH_MS) refresh()
})
void start()
