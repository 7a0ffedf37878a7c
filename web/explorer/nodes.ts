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

export interface GatewayNodeJson { location: string; uid: string; lat: number; lon: number; status: string; spectrum: string }
export interface WifiNodeJson { name: string; uid: string; status: string; model: string; wifi_level: string; lat: number; lon: number }

export function toMapNodes(gateways: GatewayNodeJson[], wifi: WifiNodeJson[]): MapNode[] {
  return [
    ...gateways.map((g): MapNode => ({ network: 'gateway', uid: g.uid, name: g.location, status: g.status, lat: g.lat, lon: g.lon, detail: g.spectrum })),
    ...wifi.map((w): MapNode => ({ network: 'wifi', uid: w.uid, name: w.name, status: w.status, lat: w.lat, lon: w.lon, detail: `${w.model} · ${w.wifi_level}` })),
  ]
}
