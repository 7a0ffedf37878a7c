import { BlockList, isIP } from 'node:net'

/**
 * Lists of addresses and ranges a setting names (TRUST_PROXY's proxies, SIP_TRUSTED_SOURCES'
 * SBCs): how an entry is written, and whether a peer's address is in the list. One reading for
 * every such setting, so what the configuration accepts is what the check matches.
 */

/** proxy-addr's names for well-known ranges (TRUST_PROXY may use them). */
export const NAMED_RANGES: Readonly<Record<string, ReadonlyArray<[string, number, 'ipv4' | 'ipv6']>>> = {
  loopback: [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']],
  linklocal: [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']],
  uniquelocal: [['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4'], ['fc00::', 7, 'ipv6']],
}

/** An IP address, or an address and a prefix length (CIDR) that fits its family. */
export function isAddressOrRange(entry: string): boolean {
  const [address, prefix, ...rest] = entry.split('/')
  const version = isIP(address ?? '')
  if (version === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  if (!/^\d{1,3}$/.test(prefix)) return false
  return Number(prefix) <= (version === 4 ? 32 : 128)
}

/** Whether a peer's address is one of `entries` (addresses, ranges, names of NAMED_RANGES); an IPv4-mapped IPv6 address counts as its IPv4 one. */
export function addressMatcher(entries: readonly string[]): (address: string) => boolean {
  const list = new BlockList()
  for (const entry of entries) {
    const named = NAMED_RANGES[entry]
    if (named !== undefined) {
      for (const [network, prefix, family] of named) list.addSubnet(network, prefix, family)
      continue
    }
    const [address, prefix] = entry.split('/') as [string, string | undefined]
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    if (prefix === undefined) list.addAddress(address, family)
    else list.addSubnet(address, Number(prefix), family)
  }
  return (address) => {
    const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
    const family = isIP(plain)
    return family !== 0 && list.check(plain, family === 6 ? 'ipv6' : 'ipv4')
  }
}
