/** Same-origin JSON calls to the KNS API (connect-src 'self'), with the API's one error shape. */

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  constructor(status: number, code: string, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

export interface ApiResponse<T> {
  body: T
  /** The server's clock from the Date header (ms), for countdowns that must not trust the device clock. */
  serverDate: number | null
}

const TIMEOUT_MS = 20_000

interface CallOptions {
  /** Longer than the default for a request the server holds on purpose (`wait`). */
  timeoutMs?: number
  signal?: AbortSignal
  /** Send this origin's cookies: only the login page's steps, which the provider's interaction cookie ties to this browser. */
  cookies?: boolean
}

async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown, options: CallOptions = {}): Promise<ApiResponse<T>> {
  let res: Response
  try {
    res = await fetch(path, {
      method,
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: options.cookies === true ? 'same-origin' : 'omit',
      cache: 'no-store',
      signal: options.signal === undefined
        ? AbortSignal.timeout(options.timeoutMs ?? TIMEOUT_MS)
        : AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs ?? TIMEOUT_MS)]),
    })
  } catch {
    throw new ApiError(0, 'NETWORK', 'The service could not be reached. Check your connection and try again.')
  }
  let parsed: unknown = null
  try {
    parsed = await res.json()
  } catch {
    // not JSON: handled below
  }
  if (!res.ok) {
    const err = (parsed ?? {}) as { code?: unknown; error?: unknown }
    const message = typeof err.error === 'string' ? err.error : `The service answered ${res.status}.`
    throw new ApiError(res.status, typeof err.code === 'string' ? err.code : 'HTTP_' + res.status, message)
  }
  const date = Date.parse(res.headers.get('date') ?? '')
  return { body: parsed as T, serverDate: Number.isNaN(date) ? null : date }
}

export const getJson = <T>(path: string, options?: CallOptions) => call<T>('GET', path, undefined, options)
export const postJson = <T>(path: string, body: unknown, options?: CallOptions) => call<T>('POST', path, body, options)
