/**
 * "Approve with your phone number" leaves the page for the login provider and comes back to
 * `/approve#id_token=...&state=...`. What must survive that round trip (which request, the
 * ephemeral key, the nonce's inputs) waits in this tab's sessionStorage, under the `state` the
 * provider hands back; nothing of it leaves the browser. This module is small and loads with
 * the page; the zkLogin code (web/approve/phone-login.ts) loads only when it is used.
 */

const STORAGE_KEY = 'kns-phone-login'
/** A login not finished within this is stale (the provider's own interaction lasts less). */
const PENDING_TTL_MS = 30 * 60_000

/** A login this tab started: everything the signature will need except the id_token. */
export interface PendingLogin {
  /** Random, sent as the OAuth `state`: the answer must carry it back. */
  state: string
  /** The approval number the login is for. */
  ref: string
  /** The ephemeral Ed25519 key (Sui's bech32 `suiprivkey...`), made in this page. */
  secretKey: string
  maxEpoch: number
  /** The nonce's randomness, decimal. */
  randomness: string
  startedAt: number
}

/** What came back from the provider, matched to the login this tab started. */
export type LoginReturn =
  | { ok: true; pending: PendingLogin; idToken: string }
  | { ok: false; ref: string | null; message: string }

export function savePending(pending: PendingLogin): void {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(pending))
}

function takePending(): PendingLogin | null {
  const raw = sessionStorage.getItem(STORAGE_KEY)
  // Used once, whatever happens next: a retry starts a new login with a new key.
  sessionStorage.removeItem(STORAGE_KEY)
  if (raw === null) return null
  try {
    const pending = JSON.parse(raw) as PendingLogin
    return Date.now() - pending.startedAt < PENDING_TTL_MS ? pending : null
  } catch {
    return null
  }
}

/**
 * The provider's answer in this page's fragment, if there is one: it is read, removed from the
 * address bar and history (the id_token must not linger there), and matched to the pending
 * login by `state`. Null when the page was opened normally.
 */
export function takeLoginReturn(): LoginReturn | null {
  if (location.hash.length < 2) return null
  const answer = new URLSearchParams(location.hash.slice(1))
  if (!answer.has('state') && !answer.has('id_token') && !answer.has('error')) return null
  const pending = takePending()
  const ref = pending?.ref ?? new URLSearchParams(location.search).get('ref')
  history.replaceState(null, '', ref === null ? location.pathname : `${location.pathname}?ref=${encodeURIComponent(ref)}`)
  if (pending === null || answer.get('state') !== pending.state) {
    return { ok: false, ref, message: 'This login was not started on this page, or took too long. Start again with "Approve with your phone number".' }
  }
  const error = answer.get('error')
  if (error !== null) {
    const message = error === 'access_denied' ? 'You did not log in, so nothing was approved.' : `The login did not finish (${error}). Try again.`
    return { ok: false, ref: pending.ref, message }
  }
  const idToken = answer.get('id_token')
  if (idToken === null) return { ok: false, ref: pending.ref, message: 'The login came back without an identity. Try again.' }
  return { ok: true, pending, idToken }
}
