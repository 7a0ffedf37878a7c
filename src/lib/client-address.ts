import { isIP } from 'node:net'

/**
 * The client a per-address limit counts: an IPv4 address as it is, an IPv6 address by its /64.
 * One host (one home, one phone's connection) is given a whole /64, and picks a new address in
 * it at will (privacy addresses): keyed by the full address, every IPv6 client would have 2^64
 * budgets. An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) is its IPv4 address. Anything that
 * is not an address is returned unchanged (it keys a budget of its own as before).
 */
export function addressGroup(address: string): string {
  if (isIP(address) === 4) return address
  if (isIP(address) !== 6) return address
  const groups = ipv6Groups(address)
  // IPv4-mapped in any spelling (`::ffff:192.0.2.1`, `::ffff:c000:201`, `0:0:0:0:0:ffff:...`):
  // else every IPv4 client written so would share the one group 0:0:0:0::/64.
  if (groups.slice(0, 5).every((group) => group === '0') && groups[5] === 'ffff') {
    const [high, low] = groups.slice(6).map((group) => Number.parseInt(group, 16)) as [number, number]
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.')
  }
  return `${groups.slice(0, 4).join(':')}::/64`
}

/** The eight 16-bit groups of an IPv6 address, in lowercase hex without leading zeros. */
function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.toLowerCase().split('%')[0]!.split('::') as [string, string | undefined]
  const parse = (part: string) => part === '' ? [] : part.split(':').flatMap((group) => {
    if (isIP(group) !== 4) return [Number.parseInt(group, 16).toString(16)]
    // An embedded IPv4 address (`::1.2.3.4`, `64:ff9b::192.0.2.1`): its two groups.
    const [a, b, c, d] = group.split('.').map(Number) as [number, number, number, number]
    return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)]
  })
  const front = parse(head)
  if (tail === undefined) return front
  const back = parse(tail)
  return [...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back]
}
