import { CheckFailed } from '../lib/checks.ts'
import { destTns, divTn, tnDigits, type DecodedJws } from './passport.ts'

/**
 * RFC 8946: a diverted call carries its shaken PASSporT and one `div` PASSporT per diversion.
 * How many diversions a call may carry: each costs a signature check (and perhaps a
 * certificate), and real calls are forwarded once or twice; a longer chain is refused rather
 * than verified at the caller's expense.
 */
export const MAX_DIVERSIONS = 5

export interface DivLink {
  jws: DecodedJws
  /** E.164 digits. */
  from: string
  to: string[]
}

/**
 * The diversions in the order the call took them: from the shaken PASSporT's `dest`, each
 * `div` PASSporT names in its `div` claim a number the call was sent to before (the previous
 * `dest`) and in its `dest` where it went next; the last `dest` is the called number. Every
 * div PASSporT given must be a link of that one chain (a branch of a forked call carries only
 * its own); a number may not be diverted from twice (no loop). Read before any signature is
 * checked: a chain that cannot be right costs no cryptography.
 */
export function orderDiversions(shaken: DecodedJws, divs: readonly DecodedJws[], destTN: string): DivLink[] {
  if (divs.length > MAX_DIVERSIONS) throw new CheckFailed('DIV_TOO_MANY', `${divs.length} diversions; at most ${MAX_DIVERSIONS} are verified`)
  const links: DivLink[] = divs.map((jws, i) => {
    const from = divTn(jws.payload)
    const to = destTns(jws.payload)
    if (from === null || to === null) throw new CheckFailed('BAD_DIV', `div PASSporT ${i + 1}: needs div {"tn": <the diverting number>} and dest {"tn": [...]}`)
    return { jws, from, to }
  })
  const first = destTns(shaken.payload)
  if (first === null) throw new CheckFailed('DEST_MISMATCH', 'the shaken PASSporT\'s dest.tn is not a telephone number or a list of them')
  let reached: string[] = first
  const ordered: DivLink[] = []
  const left = new Set(links)
  const divertedFrom = new Set<string>()
  while (left.size > 0) {
    const here: string[] = reached
    const next: DivLink[] = [...left].filter((l) => here.includes(l.from))
    if (next.length === 0) {
      const stray = [...left][0]!
      throw new CheckFailed('DIV_CHAIN_BROKEN', `a div PASSporT diverts from +${stray.from}, which the call was not sent to (${here.map((d) => `+${d}`).join(', ')})`)
    }
    if (next.length > 1) throw new CheckFailed('DIV_CHAIN_BROKEN', `${next.length} div PASSporTs divert from the same step of the call: not one chain`)
    const link: DivLink = next[0]!
    if (divertedFrom.has(link.from)) throw new CheckFailed('DIV_CHAIN_BROKEN', `+${link.from} diverts twice: a loop`)
    divertedFrom.add(link.from)
    left.delete(link)
    ordered.push(link)
    reached = link.to
  }
  const wanted = tnDigits(destTN)!
  if (!reached.includes(wanted)) {
    throw new CheckFailed('DEST_MISMATCH', ordered.length === 0 ? 'dest.tn does not contain destTN' : 'the last diversion\'s dest.tn does not contain destTN')
  }
  return ordered
}
