/**
 * Ways to approve when this browser has no Sui wallet: people open the approval link from a text
 * message, usually in the phone's own browser, where no wallet extension can live. On a phone the
 * page offers to open itself in a Sui wallet app's browser (the apps' documented universal links);
 * on a computer, a QR code carries the link to the phone.
 */

export interface WalletApp {
  name: string
  /** The universal link that opens `pageUrl` in the app's own browser (the app store when it is not installed). */
  link(pageUrl: string): string
}

/**
 * Sui wallet apps with a documented "open this page in the app" link:
 * Slush (Mysten Labs): https://my.slush.app/browse/<url> (sdk.mystenlabs.com/slush-wallet/deep-linking);
 * Phantom: https://phantom.app/ul/browse/<url>?ref=<origin> (docs.phantom.com/phantom-deeplinks).
 */
export const WALLET_APPS: readonly WalletApp[] = [
  { name: 'Slush', link: (url) => `https://my.slush.app/browse/${encodeURIComponent(url)}` },
  {
    name: 'Phantom',
    link: (url) => `https://phantom.app/ul/browse/${encodeURIComponent(url)}?ref=${encodeURIComponent(new URL(url).origin)}`,
  },
]

/** A touch device (phone, tablet): wallet apps are where its owner can approve. */
export function onTouchDevice(): boolean {
  return matchMedia('(pointer: coarse)').matches
}

/** This request's own address, without anything else the link may have carried (a fragment, tracking parameters). */
export function pageLink(ref: string): string {
  return `${location.origin}${location.pathname}?ref=${encodeURIComponent(ref)}`
}

const SVG = 'http://www.w3.org/2000/svg'

/**
 * Draws `text` as a QR code into `target`: an SVG with one path, dark on a light square whatever
 * the colour scheme (cameras read dark modules), with the standard's 4-module quiet zone. The
 * encoder (uqr, ~5 kB) is loaded only when a code is shown.
 */
export async function drawQrCode(target: HTMLElement, text: string): Promise<void> {
  const { encode } = await import('uqr')
  const { data, size } = encode(text, { ecc: 'M', border: 4 })
  let d = ''
  data.forEach((row, y) => row.forEach((dark, x) => { if (dark) d += `M${x} ${y}h1v1h-1z` }))
  const svg = document.createElementNS(SVG, 'svg')
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`)
  svg.setAttribute('shape-rendering', 'crispEdges')
  svg.setAttribute('aria-hidden', 'true')
  const light = document.createElementNS(SVG, 'rect')
  light.setAttribute('width', String(size))
  light.setAttribute('height', String(size))
  light.setAttribute('fill', '#ffffff')
  const modules = document.createElementNS(SVG, 'path')
  modules.setAttribute('d', d)
  modules.setAttribute('fill', '#000000')
  svg.append(light, modules)
  target.replaceChildren(svg)
}
