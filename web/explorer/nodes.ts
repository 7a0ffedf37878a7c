import type { GatewayNodeAnswer, WifiNodeAnswer } from '../../src/contract/api-types.ts'

/** Gateways and WiFi nodes as the map and the table show them. */
export interface MapNode {
  network: 'gateway' | 'wifi'
  uid: string
  name: string
  status: string
  lat: number
  lon: number
  /** Spectrum (gateways) or model and WiFi level. */
  detail: string
}

/** The nodes as the statistics endpoints answer them (the API's own types). */
export type GatewayNodeJson = GatewayNodeAnswer
export type WifiNodeJson = WifiNodeAnswer

export function toMapNodes(gateways: GatewayNodeJson[], wifi: WifiNodeJson[]): MapNode[] {
  return [
    ...gateways.map((g): MapNode => ({ network: 'gateway', uid: g.uid, name: g.location, status: g.status, lat: g.lat, lon: g.lon, detail: g.spectrum })),
    ...wifi.map((w): MapNode => ({ network: 'wifi', uid: w.uid, name: w.name, status: w.status, lat: w.lat, lon: w.lon, detail: `${w.model} · ${w.wifi_level}` })),
  ]
}
