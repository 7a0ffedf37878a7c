/**
 * Server configuration a page needs, rendered by src/http/routes/pages.ts into
 * `<meta name="kns-page-config" content="{json}">` (no inline script, so the CSP stays strict,
 * and no extra round trip). Under `vite dev` the placeholder `{}` gives the defaults.
 */
export interface PageConfig {
  /** Which ledger the service verifies against: decides how an `event` approval is made. */
  ledger: 'local' | 'sui'
  /** `mainnet` or `testnet`: the wallet chain `sui:<network>` for transactions. */
  suiNetwork: 'mainnet' | 'testnet'
  /** The package `kns::approve` is called on (LEDGER=sui): the latest version of the KNS package. */
  callPackageId: string
}

const DEFAULTS: PageConfig = { ledger: 'local', suiNetwork: 'testnet', callPackageId: '' }

export function readPageConfig(doc: Document = document): PageConfig {
  const raw = doc.querySelector('meta[name="kns-page-config"]')?.getAttribute('content') ?? '{}'
  try {
    const parsed = JSON.parse(raw) as Partial<PageConfig>
    return {
      ledger: parsed.ledger === 'sui' ? 'sui' : 'local',
      suiNetwork: parsed.suiNetwork === 'mainnet' ? 'mainnet' : 'testnet',
      callPackageId: typeof parsed.callPackageId === 'string' ? parsed.callPackageId : '',
    }
  } catch {
    return DEFAULTS
  }
}
