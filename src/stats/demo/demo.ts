/**
 * A synthetic network for demos and benchmarks: gateways and WiFi nodes in world cities,
 * clients that join over time (usage grows about threefold over the period), a daily
 * rhythm in each node's local time, heavy and light users, and number-system sign-ups
 * across countries. Everything follows from the options: the same options give the same data.
 */
import { createHash } from 'node:crypto'
import { getExampleNumber } from 'libphonenumber-js/max'
import examples from 'libphonenumber-js/mobile/examples'
import type { CountryCode } from 'libphonenumber-js'
import { PLACES, type Place } from './places.ts'
import type { Gateway, WifiNode } from '../../contract/stats-schemas.ts'
import { DAY, HOUR } from '../time.ts'
import type { Session } from '../ingest/validate-session.ts'

export interface DemoOptions {
  sessions: number
  days: number
  numbers: number
  seed: number
  /**
   * End of the generated period (exclusive), epoch ms: the data reaches it. The last of `days`
   * UTC days is the one holding it, generated whole and cut at `until` (so a later run the same
   * day gives the same sessions up to its own end, and seeding again adds only the newer ones).
   */
  until: number
}

/** mulberry32: small, fast, and the same sequence everywhere for a seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function weightedPlace(random: () => number): Place {
  const total = PLACES.reduce((sum, p) => sum + p.weight, 0)
  let r = random() * total
  for (const place of PLACES) if ((r -= place.weight) < 0) return place
  return PLACES[PLACES.length - 1]!
}

const VENUES = ['Cafe', 'Library', 'Market', 'Station', 'Campus', 'Hostel', 'Plaza', 'Harbour']
const WIFI_MODELS = ['KNS-AP6', 'KNS-AP6E', 'OpenWave 5']
const WIFI_LEVELS = ['WiFi 5', 'WiFi 6', 'WiFi 6E']

export interface DemoNodes {
  gateways: Gateway[]
  wifiNodes: WifiNode[]
}

export function demoNodes(options: DemoOptions): DemoNodes {
  const random = prng(options.seed)
  const gatewayCount = Math.max(8, Math.min(2000, Math.round(options.sessions / 5000)))
  const wifiCount = Math.max(8, Math.min(4000, Math.round(options.sessions / 3000)))
  const jitter = () => (random() - 0.5) * 0.3
  const status = (): Gateway['status'] => {
    const r = random()
    return r < 0.85 ? 'Online' : r < 0.95 ? 'Offline' : 'Pending'
  }
  const gateways: Gateway[] = Array.from({ length: gatewayCount }, (_, i) => {
    const place = weightedPlace(random)
    return {
      uid: `gw-${String(i + 1).padStart(4, '0')}`, location: `${place.city}, ${place.country}`,
      lat: +(place.lat + jitter()).toFixed(5), lon: +(place.lon + jitter()).toFixed(5), status: status(), spectrum: 'CBRS band 48',
    }
  })
  const wifiNodes: WifiNode[] = Array.from({ length: wifiCount }, (_, i) => {
    const place = weightedPlace(random)
    return {
      name: `${place.city} ${VENUES[Math.floor(random() * VENUES.length)]} ${i + 1}`, uid: `wifi-${String(i + 1).padStart(4, '0')}`,
      status: status(), model: WIFI_MODELS[Math.floor(random() * WIFI_MODELS.length)]!, wifi_level: WIFI_LEVELS[Math.floor(random() * WIFI_LEVELS.length)]!,
      lat: +(place.lat + jitter()).toFixed(5), lon: +(place.lon + jitter()).toFixed(5),
    }
  })
  return { gateways, wifiNodes }
}

/** Relative usage by local hour: quiet at night, peaking in the evening. */
function rhythm(localHour: number): number {
  return 0.15 + Math.max(0, Math.sin(((localHour - 6) / 24) * 2 * Math.PI)) + (localHour >= 18 && localHour <= 22 ? 0.5 : 0)
}

/**
 * Sessions (or sign-ups) per day: growing linearly to three times the first day's, summing to
 * `total` exactly. Each day gets its share rounded down, and the remainder goes one each to the
 * days whose shares lost most in the rounding (ties to the earlier day): no day is more than one
 * away from its share, and the same arguments give the same counts.
 */
export function dailyCounts(total: number, days: number): number[] {
  const weights = Array.from({ length: days }, (_, d) => 1 + (2 * d) / Math.max(1, days - 1))
  const sum = weights.reduce((a, b) => a + b, 0)
  const shares = weights.map((w) => (total * w) / sum)
  const counts = shares.map((share) => Math.floor(share))
  const remainder = total - counts.reduce((a, b) => a + b, 0)
  const byLoss = shares.map((share, d) => ({ d, loss: share - Math.floor(share) })).sort((a, b) => b.loss - a.loss || a.d - b.d)
  for (let k = 0; k < remainder; k++) counts[byLoss[k % days]!.d]! += 1
  return counts
}

/** Start of the first generated day: `days` whole UTC days end with the one holding `until`. */
function firstDay(options: DemoOptions): number {
  return Math.ceil(options.until / DAY) * DAY - options.days * DAY
}

const ymd = (ms: number) => new Date(ms).toISOString().slice(0, 10).replace(/-/g, '')

/** The sessions, one UTC day at a time, each day in start order. */
export function* demoSessions(options: DemoOptions, nodes: DemoNodes): Generator<Session[]> {
  const random = prng(options.seed ^ 0x9e3779b9)
  const clients = Math.max(20, Math.round(options.sessions / 40))
  const first = firstDay(options)
  const counts = dailyCounts(options.sessions, options.days)
  for (let d = 0; d < options.days; d++) {
    const dayStart = first + d * DAY
    // 30% of the clients from the start, the others joining evenly: usage grows.
    const joined = Math.max(1, Math.round(clients * (0.3 + (0.7 * (d + 1)) / options.days)))
    const day: Session[] = []
    for (let i = 0; i < counts[d]!; i++) {
      // Earlier clients are heavier users (index skewed towards 0).
      const client = Math.floor(joined * random() ** 1.6)
      const wifi = client % 10 < 3 ? random() < 0.85 : random() < 0.1
      const list = wifi ? nodes.wifiNodes : nodes.gateways
      const node = random() < 0.85 ? list[client % list.length]! : list[Math.floor(random() * list.length)]!
      let start: number
      do start = dayStart + Math.floor(random() * DAY)
      while (random() * 2.2 > rhythm((((start - dayStart) / HOUR + node.lon / 15) % 24 + 24) % 24))
      const bytesDown = Math.floor(80e6 * random() ** 3) + 2000
      day.push({
        sessionId: `demo${options.seed}-${ymd(dayStart)}-${i}`, network: wifi ? 'wifi' : 'gateway', nodeUid: node.uid,
        clientId: `demo-device-${options.seed}-${client}`, start, end: start + 60_000 + Math.floor(random() * 2 * HOUR),
        bytesUp: Math.floor(bytesDown * (0.05 + 0.2 * random())), bytesDown,
      })
    }
    // The day holding `until` was drawn whole (the same sequence whatever its end): only its past is kept.
    yield day.filter((session) => session.start < options.until).sort((a, b) => a.start - b.start)
  }
}

export interface DemoSignup { phone: string; objectId: string; createdAt: number }

/** Sign-ups, growing like usage, in the countries of the demo cities (by weight). */
export function* demoSignups(options: DemoOptions): Generator<DemoSignup> {
  const random = prng(options.seed ^ 0x85ebca6b)
  const first = firstDay(options)
  const counts = dailyCounts(options.numbers, options.days)
  let serial = 0
  for (let d = 0; d < options.days; d++) {
    for (let i = 0; i < counts[d]!; i++) {
      const country = weightedPlace(random).country as CountryCode
      const example = getExampleNumber(country, examples)!.number
      // Vary the subscriber digits: same country and length, a different number each time.
      const digits = String(serial++ * 7919 % 1_000_000).padStart(6, '0')
      const phone = `${example.slice(0, -6)}${digits}`
      const objectId = `0x${createHash('sha256').update(`kns-demo/${options.seed}/${phone}`).digest('hex')}`
      const createdAt = first + d * DAY + Math.floor(random() * DAY)
      if (createdAt < options.until) yield { phone, objectId, createdAt }
    }
  }
}
