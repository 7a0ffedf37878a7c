/**
 * The API reference page at /docs: the service's own OpenAPI document, drawn by
 * web/docs/reference.ts. Served like every page (strict CSP, nothing from elsewhere), readable
 * on a phone: the contents fold away below 60rem.
 */
import '../shared/base.css'
import './docs.css'
import { getJson } from '../shared/api.ts'
import { renderReference, type OpenApiDocument } from './reference.ts'

async function start(): Promise<void> {
  const main = document.getElementById('main')!
  try {
    const { body } = await getJson<OpenApiDocument>('/openapi.json')
    renderReference(body, main, document.getElementById('contents-list')!)
    // On a phone the contents start folded: the reference comes first.
    if (matchMedia('(max-width: 59.99rem)').matches) document.getElementById('contents-box')!.removeAttribute('open')
    // Opened at an operation's address: go there now that it exists.
    if (location.hash.length > 1) document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView()
  } catch (err) {
    const message = document.createElement('p')
    message.setAttribute('role', 'alert')
    message.textContent = `The reference could not be loaded: ${err instanceof Error ? err.message : String(err)}. The document itself is at /openapi.json.`
    main.replaceChildren(message)
  } finally {
    main.setAttribute('aria-busy', 'false')
  }
}

void start()
