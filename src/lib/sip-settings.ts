import { isIP } from 'node:net'
import { ConfigError } from '../errors.ts'
import { isAddressOrRange } from './address-ranges.ts'

/** The SIP redirect interface's settings (docs/sip.md); null when SIP_LISTEN is unset: no SIP at all. */
export interface SipSettings {
  host: string
  port: number
  /** SIP_TRUSTED_SOURCES: the SBC addresses and ranges (CIDR) whose requests are served; others are dropped. */
  trustedSources: string[]
  /** SIP_SIGNING_KEY: the API key (its id) whose signing binding governs what SIP INVITEs may sign. */
  signingKeyId: string | null
  /** SIP_BLOCK: verification outcomes answered 603+ instead of 302. */
  block: Array<'failed' | 'unverified'>
  /** SIP_REDRESS: where a blocked caller can ask for redress (https URL, tel:+E164 or mailto:). */
  redress: string | null
}

type Env = Record<string, string | undefined>

export function sipSettings(env: Env): SipSettings | null {
  const listen = (env.SIP_LISTEN ?? '').trim()
  if (listen === '') return null
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:]+)):(\d{1,5})$/.exec(listen)
  const host = match?.[1] ?? match?.[2]
  const port = Number(match?.[3])
  if (match === null || host === undefined || port > 65535 || (isIP(host) === 0 && host !== 'localhost')) {
    throw new ConfigError(`SIP_LISTEN must be host:port (an IP address, e.g. 0.0.0.0:5060 or [::]:5060), got ${JSON.stringify(listen)}`)
  }
  const trustedSources = (env.SIP_TRUSTED_SOURCES ?? '').split(',').map((s) => s.trim()).filter(Boolean)
  if (trustedSources.length === 0) {
    throw new ConfigError('SIP_LISTEN is set but SIP_TRUSTED_SOURCES is empty: name the SBC addresses or ranges (CIDR) that may use the SIP interface')
  }
  const bad = trustedSources.find((s) => !isAddressOrRange(s))
  if (bad !== undefined) throw new ConfigError(`SIP_TRUSTED_SOURCES: ${JSON.stringify(bad)} is not an IP address or range (CIDR)`)
  // A /0 trusts every address (an IPv6 /0 the IPv4 ones too): not a list of SBCs.
  const everyone = trustedSources.find((s) => /\/0+$/.test(s))
  if (everyone !== undefined) throw new ConfigError(`SIP_TRUSTED_SOURCES: ${everyone} would trust every address; name the SBCs' addresses or ranges`)
  const signingKeyId = (env.SIP_SIGNING_KEY ?? '').trim() || null
  if (signingKeyId !== null && !/^[0-9a-f]{16}$/.test(signingKeyId)) throw new ConfigError('SIP_SIGNING_KEY is the id of an API key with the signing scope (kns api-key list: 16 hex digits), not the key itself')
  const block = (env.SIP_BLOCK ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '' && s !== 'off')
  const badBlock = block.find((b) => b !== 'failed' && b !== 'unverified')
  if (badBlock !== undefined) throw new ConfigError(`SIP_BLOCK lists failed and/or unverified (or off), got ${JSON.stringify(badBlock)}`)
  const redress = (env.SIP_REDRESS ?? '').trim() || null
  if (redress !== null && !/^(https:\/\/[^\s";,]+|tel:\+[1-9]\d{1,14}|mailto:[^\s";,@]+@[^\s";,@]+)$/.test(redress)) {
    throw new ConfigError('SIP_REDRESS is an https URL, tel:+E164 or mailto:address (ATIS-1000099: where a blocked caller asks for redress)')
  }
  if (block.length > 0 && redress === null) throw new ConfigError('SIP_BLOCK answers 603+, which must tell the caller where to seek redress: set SIP_REDRESS')
  return { host, port, trustedSources, signingKeyId, block: block as Array<'failed' | 'unverified'>, redress }
}
