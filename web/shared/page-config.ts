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
  /** This server's login provider's authorization endpoint (same origin): "Approve with your phone number". */
  loginAuthUrl: string
  /** The built-in login client (ZKLOGIN_CLIENT_ID): the `aud` of every phone-login address. */
  loginClientId: string
  /** Where the provider sends the id_token back: exactly `$PUBLIC_BASE_URL/approve`. */
  loginRedirectUri: string
}

const DEFAULTS: PageConfig = {
  ledger: 'local', suiNetwork: 'testnet', callPackageId: '', loginAuthUrl: '/oidc/auth', loginClientId: 'kns', loginRedirectUri: '/approve',
}

const text = (value: unknown, fallback: string): string => typeof value === 'string' && value !== '' ? value : fallback

export function readPageConfig(doc: Document = document): PageConfig {
  const raw = doc.querySelector('meta[name="kns-page-config"]')?.getAttribute('content') ?? '{}'
  try {
    const parsed = JSON.parse(raw) as Partial<PageConfig>
    return {
      ledger: parsed.ledger === 'sui' ? 'sui' : 'local',
      suiNetwork: parsed.suiNetwork === 'mainnet' ? 'mainnet' : 'testnet',
      callPackageId: typeof parsed.callPackageId === 'string' ? parsed.callPackageId : '',
      loginAuthUrl: text(parsed.loginAuthUrl, DEFAULTS.loginAuthUrl),
      loginClientId: text(parsed.loginClientId, DEFAULTS.loginClientId),
      loginRedirectUri: text(parsed.loginRedirectUri, DEFAULTS.loginRedirectUri),
    }
  } catch {
    return DEFAULTS
  }
}
