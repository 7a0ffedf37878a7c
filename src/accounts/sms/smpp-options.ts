import smpp from 'smpp'

/**
 * What the SMPP sender is told by its configuration, and how a message becomes submit_sm
 * parameters. Errors here name the problem, never the URL (it holds the password).
 */

export interface SmppEndpoint {
  host: string
  port: number
  /** `ssmpp://`: SMPP over TLS. */
  tls: boolean
  systemId: string
  password: string
  /** `?bind=transceiver`; a transmitter by default (we only send; no deliver_sm to answer). */
  bind: 'transmitter' | 'transceiver'
  /** `?source_ton=`/`?source_npi=`: override what sourceAddress infers from the sender ID. */
  sourceTon?: number
  sourceNpi?: number
}

/** `smpp://system_id:password@host:port` or `ssmpp://...` (TLS); port 2775 / 3550 by default. */
export function parseSmppUrl(raw: string): SmppEndpoint {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new Error('not a URL (smpp://system_id:password@host:port)')
  }
  if (url.protocol !== 'smpp:' && url.protocol !== 'ssmpp:') throw new Error('the scheme must be smpp:// or ssmpp:// (TLS)')
  if (url.hostname === '') throw new Error('no host')
  if (url.username === '') throw new Error('no system_id (smpp://system_id:password@host:port)')
  const tls = url.protocol === 'ssmpp:'
  const endpoint: SmppEndpoint = {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (tls ? 3550 : 2775) : Number(url.port),
    tls,
    systemId: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    bind: 'transmitter',
  }
  for (const [name, value] of url.searchParams) {
    if (name === 'bind') {
      if (value !== 'transmitter' && value !== 'transceiver') throw new Error('bind must be transmitter or transceiver')
      endpoint.bind = value
    } else if (name === 'source_ton' || name === 'source_npi') {
      const n = Number(value)
      if (!/^[0-9]{1,3}$/.test(value) || n > 255) throw new Error(`${name} must be a number 0-255`)
      if (name === 'source_ton') endpoint.sourceTon = n
      else endpoint.sourceNpi = n
    } else {
      throw new Error(`unknown parameter ${JSON.stringify(name)} (bind, source_ton, source_npi)`)
    }
  }
  return endpoint
}

/** `host:port`, for logs and errors. */
export function where(endpoint: SmppEndpoint): string {
  return `${endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host}:${endpoint.port}`
}

export interface SourceAddress {
  source_addr: string
  source_addr_ton: number
  source_addr_npi: number
}

/**
 * The sender ID as SMPP wants it: `+4670...` -> international (TON 1, NPI 1, without the +);
 * digits only (a short code) -> TON 0, NPI 1, left to the SMSC; anything else is alphanumeric
 * (TON 5, NPI 0, at most 11 characters). None: empty, the SMSC puts its default.
 */
export function sourceAddress(from: string | undefined, endpoint: Pick<SmppEndpoint, 'sourceTon' | 'sourceNpi'> = {}): SourceAddress {
  let address: SourceAddress
  if (from === undefined || from === '') address = { source_addr: '', source_addr_ton: 0, source_addr_npi: 0 }
  else if (/^\+[0-9]{1,15}$/.test(from)) address = { source_addr: from.slice(1), source_addr_ton: 1, source_addr_npi: 1 }
  else if (/^[0-9]{1,15}$/.test(from)) address = { source_addr: from, source_addr_ton: 0, source_addr_npi: 1 }
  else if (/^[ -~]{1,11}$/.test(from)) address = { source_addr: from, source_addr_ton: 5, source_addr_npi: 0 }
  else throw new Error('the sender ID must be +digits, digits, or at most 11 printable ASCII characters')
  if (endpoint.sourceTon !== undefined) address.source_addr_ton = endpoint.sourceTon
  if (endpoint.sourceNpi !== undefined) address.source_addr_npi = endpoint.sourceNpi
  return address
}

/**
 * The text's submit_sm parameters. Text the GSM 7-bit default alphabet can hold goes as
 * data_coding 0 (SMSC default alphabet, one octet per septet); anything else as UCS-2
 * (data_coding 8). The package's own choice would be data_coding 1 (IA5) for GSM text, which
 * SMSCs read differently, so we encode ourselves. One SMS (160 septets, 70 UCS-2 characters)
 * goes in short_message; longer text in the message_payload TLV, for the SMSC to split.
 */
export function textParameters(text: string): { data_coding: number; short_message: Buffer; message_payload?: Buffer } {
  const gsm = smpp.encodings.ASCII.match(text)
  const encoded = gsm ? smpp.encodings.ASCII.encode(text) : smpp.encodings.UCS2.encode(text)
  const data_coding = gsm ? 0 : 8
  if (encoded.length <= 140 || (gsm && encoded.length <= 160)) return { data_coding, short_message: encoded }
  return { data_coding, short_message: Buffer.alloc(0), message_payload: encoded }
}

const STATUS_NAMES = new Map(Object.entries(smpp.errors).map(([name, status]) => [status, name]))

/** `ESME_RTHROTTLED (0x58)`. */
export function statusName(status: number): string {
  return `${STATUS_NAMES.get(status) ?? 'unknown status'} (0x${status.toString(16)})`
}
