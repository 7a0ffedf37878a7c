/**
 * DOM updates for the approval page. Every vendor-supplied string goes through textContent:
 * the page never builds HTML from data.
 */
import { maskPhone } from '../shared/mask-phone.ts'
import type { PageConfig } from '../shared/page-config.ts'
import type { Details } from './flow.ts'
import { safeRedirect } from './flow.ts'
import { shortAddress, type Wallet } from './wallet.ts'

export function el<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id)
  if (found === null) throw new Error(`#${id} is missing from the page`)
  return found as T
}

function setField(name: string, text: string): void {
  for (const node of document.querySelectorAll<HTMLElement>(`[data-field="${name}"]`)) node.textContent = text
}

export function methodLabel(details: Details, config: PageConfig): string {
  if (details.method === 'sign') return 'Sign a message in your wallet (no fee)'
  return config.ledger === 'sui' ? 'Sui transaction from your wallet (network fee)' : 'Approve on the KNS ledger with your wallet'
}

/** `14:59`, or `2 h 05 min` above an hour; never negative. */
export function formatRemaining(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000))
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`
}

function finishLoading(): void {
  el('loading').hidden = true
  document.getElementById('loading-label')?.remove()
  el('main').setAttribute('aria-busy', 'false')
}

/** A moment in the reader's own time zone and words: "24 Nov 2026, 14:05". */
function setTime(name: string, iso: string): void {
  const node = document.querySelector<HTMLTimeElement>(`time[data-field="${name}"]`)!
  node.dateTime = iso
  node.textContent = new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}

export function showRequest(details: Details, config: PageConfig): void {
  setField('vendorBrand', details.vendorBrand)
  setField('title', details.title)
  setField('message', details.message)
  setField('phone', details.phoneNumber ? maskPhone(details.phoneNumber) : 'Not known')
  setTime('createdAt', details.createdAt)
  setTime('expiresAt', details.expiresAt)
  // What approving does, in plain words; the mechanics stay behind "Technical details".
  setField('what', `Approving tells ${details.vendorBrand} that you, the owner of this phone number, agree to this request. ` +
    'It does not transfer your number or your funds. If you did not ask for this, do not approve it.')
  setField('method', methodLabel(details, config))
  const owner = document.querySelector<HTMLElement>('[data-field="owner"]')!
  owner.textContent = details.wallet ? shortAddress(details.wallet) : 'None'
  if (details.wallet) owner.title = details.wallet
  document.title = `Approve: ${details.title} · ${details.vendorBrand}`
  finishLoading()
  el('final').hidden = true
  el('request').hidden = false
}

export function showCountdown(remainingMs: number): void {
  const node = el('countdown')
  node.textContent = formatRemaining(remainingMs)
  node.classList.toggle('urgent', remainingMs < 60_000)
}

export type FinalState = 'approved' | 'cancelled' | 'expired' | 'unknown' | 'unavailable'

const FINAL_TEXT: Record<FinalState, { heading: string; text: (d?: Details) => string }> = {
  approved: {
    heading: 'Already approved',
    text: (d) => `This request was approved${d?.wallet ? ` by wallet ${shortAddress(d.wallet)}` : ''}. Nothing more to do.`,
  },
  cancelled: { heading: 'Request cancelled', text: () => 'This request was cancelled. It can no longer be approved.' },
  expired: {
    heading: 'Request expired',
    text: (d) => `This request was not answered in time and can no longer be approved.${d ? ` If you still need it, ask ${d.vendorBrand} to send a new one.` : ''}`,
  },
  unknown: {
    heading: 'Request not found',
    text: () => 'This link does not match any approval request. Check that you opened the whole link you were sent.',
  },
  unavailable: { heading: 'Could not load the request', text: () => 'The service could not be reached.' },
}

/** A request that cannot be answered (or could not be loaded). Moves focus to the heading. */
export function showFinal(state: FinalState, details?: Details, reason?: string): void {
  const section = el('final')
  section.dataset.state = state
  const copy = FINAL_TEXT[state]
  el('final-vendor').textContent = details ? `Request from ${details.vendorBrand}` : ''
  el('final-vendor').hidden = details === undefined
  el('final-heading').textContent = copy.heading
  el('final-text').textContent = reason ?? copy.text(details)
  el('final-title').textContent = details ? details.title : ''
  el('final-title').hidden = details === undefined
  const link = el<HTMLAnchorElement>('final-link')
  const target = details ? safeRedirect(state === 'approved' ? details.successRedirectUrl : details.cancelRedirectUrl) : null
  link.hidden = target === null
  if (target !== null) {
    link.href = target
    link.textContent = `Back to ${details!.vendorBrand}`
  }
  el('retry-load').hidden = state !== 'unavailable'
  document.title = `${copy.heading} · KNS`
  const wasLoading = !el('loading').hidden
  if (wasLoading) finishLoading()
  el('request').hidden = true
  el('main').dataset.view = 'final'
  section.hidden = false
  if (!wasLoading) el('final-heading').focus()
}

export function setBusy(busy: boolean): void {
  for (const id of ['approve', 'cancel']) el(id).setAttribute('aria-disabled', String(busy))
  el('request').setAttribute('aria-busy', String(busy))
}

export function setProgress(text: string): void {
  el('progress').textContent = text
}

export function showError(text: string | null): void {
  el('error').hidden = text === null
  el('error-text').textContent = text ?? ''
}

/** The wallet chooser (several Sui wallets are installed): calls `onPick` with the one chosen. */
export function showWalletPicker(wallets: Wallet[], onPick: (wallet: Wallet) => void): void {
  const list = el('wallet-list')
  list.replaceChildren()
  for (const wallet of wallets) {
    const item = document.createElement('li')
    const button = document.createElement('button')
    button.type = 'button'
    button.className = 'button secondary'
    if (/^data:image\/(svg\+xml|webp|png|gif);base64,/.test(wallet.icon)) {
      const icon = document.createElement('img')
      icon.src = wallet.icon
      icon.alt = ''
      icon.width = 28
      icon.height = 28
      button.append(icon)
    }
    button.append(document.createTextNode(wallet.name))
    button.addEventListener('click', () => onPick(wallet))
    item.append(button)
    list.append(item)
  }
  el('wallet-picker').hidden = false
  // The choice replaces the Approve button (it would only open this list again).
  el('approve').hidden = true
  list.querySelector('button')?.focus()
}

export function hideWalletPicker(): void {
  el('wallet-picker').hidden = true
  el('approve').hidden = false
}
