/**
 * The login page of the service's OpenID provider, at `<issuer path>/interaction/<uid>`: the
 * provider sends the browser here to log in, the page asks for the number, then for the code
 * texted to it (the JSON steps of src/http/routes/accounts.ts, tied to this browser by the
 * provider's interaction cookie), and hands the browser back to the provider with `redirectTo`.
 * Nothing here knows whether the number has an account: the service answers alike. For a CAMARA
 * client (a bank checking the number for fraud) the provider then asks for consent: the page
 * names the client, what it will learn about the number and why, and sends the answer.
 */
import '../shared/base.css'
import '../shared/card.css'
import './login.css'
import { ApiError, getJson, postJson } from '../shared/api.ts'
import { normalizePhone } from './phone-input.ts'

interface DescribedScope { scope: string; description: string }
interface ConsentAsked { scopes: DescribedScope[]; purpose: DescribedScope }
interface LoginDetails { uid: string; prompt: string; client: { clientId: string; name: string }; expiresAt: string; consent?: ConsentAsked | null }
interface CodeSent { sentTo: string; expiresInS: number; resendAfterS: number }

const base = location.pathname.replace(/\/+$/, '')
const withCookies = { cookies: true }
let busy = false
let resendTimer: ReturnType<typeof setInterval> | undefined
let lastPhone = ''
let otpWait: AbortController | undefined

function el<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id)
  if (found === null) throw new Error(`#${id} is missing from the page`)
  return found as T
}

function finishLoading(): void {
  document.getElementById('loading-label')?.remove()
  el('main').setAttribute('aria-busy', 'false')
}

function showError(text: string | null, field?: 'phone' | 'code'): void {
  el('error').hidden = text === null
  el('error-text').textContent = text ?? ''
  for (const id of ['phone', 'code']) el(id).removeAttribute('aria-invalid')
  if (field !== undefined && text !== null) {
    const input = el<HTMLInputElement>(field)
    input.setAttribute('aria-invalid', 'true')
    input.focus()
    input.select()
  }
}

function setBusy(on: boolean, text = ''): void {
  busy = on
  el('progress').textContent = text
  for (const id of ['send', 'log-in', 'resend', 'other-number', 'cancel', 'allow', 'refuse']) el(id).setAttribute('aria-disabled', String(on))
}

function showStep(step: 'number' | 'code'): void {
  el('number-step').hidden = step !== 'number'
  el('code-step').hidden = step !== 'code'
  el('cancel-line').hidden = false
  el(step === 'number' ? 'phone' : 'code').focus()
}

/** The login cannot go on here: say why and what to do. */
function showFinal(heading: string, text: string): void {
  finishLoading()
  otpWait?.abort()
  clearInterval(resendTimer)
  for (const id of ['number-step', 'code-step', 'consent-step', 'cancel-line', 'error']) el(id).hidden = true
  el('progress').textContent = ''
  el('final-heading').textContent = heading
  el('final-text').textContent = text
  el('final').hidden = false
  el('final-heading').focus()
}

const EXPIRED = (): void => showFinal('This login has expired',
  'Logins last a few minutes and work only in the browser that started them. Go back to the page that sent you here and start again.')

function startResendCountdown(seconds: number): void {
  clearInterval(resendTimer)
  let left = seconds
  const resend = el('resend')
  const tick = () => {
    resend.hidden = left > 0
    el('resend-wait').textContent = left > 0 ? `You can ask for a new code in ${left} s.` : ''
    if (left-- <= 0) clearInterval(resendTimer)
  }
  tick()
  resendTimer = setInterval(tick, 1000)
}

/** The browser offers the texted code itself where it can (WebOTP: the text's last line names this host). */
function offerCodeFromText(): void {
  otpWait?.abort()
  if (!('OTPCredential' in window)) return
  const stop = new AbortController()
  otpWait = stop
  const request = { otp: { transport: ['sms'] }, signal: stop.signal } as CredentialRequestOptions
  navigator.credentials.get(request).then((credential) => {
    const code = (credential as { code?: string } | null)?.code
    if (code && /^\d{6}$/.test(code) && !busy) {
      el<HTMLInputElement>('code').value = code
      void logIn()
    }
  }, () => { /* declined, or another code asked for */ })
}

async function sendCode(phone: string): Promise<void> {
  setBusy(true, 'Sending the code…')
  showError(null)
  try {
    const { body } = await postJson<CodeSent>(`${base}/code`, { phoneNumber: phone }, withCookies)
    lastPhone = phone
    setBusy(false)
    el('sent-to').textContent = `If ${body.sentTo} has an account, a code is on its way to it by text message.`
    el<HTMLInputElement>('code').value = ''
    showStep('code')
    startResendCountdown(body.resendAfterS)
    offerCodeFromText()
  } catch (err) {
    setBusy(false)
    failed(err, 'phone')
  }
}

async function logIn(): Promise<void> {
  if (busy) return
  const input = el<HTMLInputElement>('code')
  const code = input.value.replace(/\s/g, '')
  if (!/^\d{6}$/.test(code)) return showError('The code is the 6 digits in the text message.', 'code')
  setBusy(true, 'Checking the code…')
  showError(null)
  try {
    const { body } = await postJson<{ redirectTo: string }>(`${base}/login`, { code }, withCookies)
    otpWait?.abort()
    el('progress').textContent = 'Logged in. Going back…'
    location.assign(body.redirectTo)
  } catch (err) {
    setBusy(false)
    if (err instanceof ApiError && err.code === 'LOGIN_CODE_EXPIRED') {
      showStep('number')
      return showError(`${err.message} Ask for a new code.`)
    }
    failed(err, 'code')
  }
}

function failed(err: unknown, field: 'phone' | 'code'): void {
  if (err instanceof ApiError && err.status === 404) return EXPIRED()
  const message = err instanceof Error && err.message ? err.message : 'Something went wrong. Please try again.'
  // Worded for people, not for the API: the one validation a person can fix here is the number.
  if (err instanceof ApiError && err.code === 'INVALID_REQUEST') return showError('That does not look like a phone number. Check it and try again.', 'phone')
  showError(message, field)
}

async function cancel(): Promise<void> {
  if (busy) return
  setBusy(true, 'Going back…')
  try {
    const { body } = await postJson<{ redirectTo: string }>(`${base}/abort`, {}, withCookies)
    location.assign(body.redirectTo)
  } catch (err) {
    setBusy(false)
    failed(err, 'phone')
  }
}

/** The consent step: the client, what it asks in words, the purpose; the list is built as text, never as HTML. */
function showConsent(client: string, asked: ConsentAsked): void {
  el('consent-heading').textContent = `Allow ${client} to check your phone number?`
  const list = el('consent-scopes')
  list.replaceChildren(...asked.scopes.map((s) => {
    const item = document.createElement('li')
    item.textContent = s.description
    return item
  }))
  el('consent-purpose').textContent = asked.purpose.description
  // The warning about the texted code speaks of a code this step does not ask for.
  el('code-footnote').hidden = true
  el('consent-step').hidden = false
  el('consent-heading').focus()
}

async function decide(decision: 'approve' | 'deny'): Promise<void> {
  if (busy) return
  setBusy(true, decision === 'approve' ? 'Allowing…' : 'Going back…')
  showError(null)
  try {
    const { body } = await postJson<{ redirectTo: string }>(`${base}/consent`, { decision }, withCookies)
    location.assign(body.redirectTo)
  } catch (err) {
    setBusy(false)
    if (err instanceof ApiError && err.status === 404) return EXPIRED()
    showError(err instanceof Error && err.message ? err.message : 'Something went wrong. Please try again.')
  }
}

async function start(): Promise<void> {
  try {
    const { body } = await getJson<LoginDetails>(`${base}/details`, withCookies)
    for (const node of document.querySelectorAll('[data-field="client"]')) node.textContent = `To continue to ${body.client.name}`
    finishLoading()
    if (body.prompt === 'consent' && body.consent) return showConsent(body.client.name, body.consent)
    showStep('number')
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return EXPIRED()
    showFinal('Could not load the login', err instanceof Error ? err.message : 'The service could not be reached.')
  }
}

el('number-form').addEventListener('submit', (event) => {
  event.preventDefault()
  if (busy) return
  const phone = normalizePhone(el<HTMLInputElement>('phone').value)
  if (phone === null) return showError('Type the number with + and its country code, for example +44 7700 900123.', 'phone')
  void sendCode(phone)
})
el('code-form').addEventListener('submit', (event) => {
  event.preventDefault()
  void logIn()
})
el('resend').addEventListener('click', () => { if (!busy && lastPhone !== '') void sendCode(lastPhone) })
el('other-number').addEventListener('click', () => {
  if (busy) return
  otpWait?.abort()
  showError(null)
  showStep('number')
})
el('cancel').addEventListener('click', () => void cancel())
el('allow').addEventListener('click', () => void decide('approve'))
el('refuse').addEventListener('click', () => void decide('deny'))
void start()
