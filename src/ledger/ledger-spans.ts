/**
 * A span per ledger read (docs/operations.md, Traces): `ledger <method>` with the ledger's kind
 * and whether the read asked the ledger itself (`fresh`), never the IDs it names. On the
 * embedded ledger the read's database statements are its children; on Sui it is the GraphQL
 * round trip. Without tracing the ledger is returned as it is.
 */
import { inSpan, tracingOn } from '../lib/tracing.ts'
import type { Ledger } from './ledger.ts'

const READS = new Set<string>(['getToken', 'getTransaction', 'approvalEvents', 'getKeystore', 'getLinkedKeystores', 'currentEpoch', 'verifyPersonalMessage'])

export function withLedgerSpans<L extends Ledger>(ledger: L): L {
  if (!tracingOn()) return ledger
  const kind = ledger.kind === 'sui' ? 'client' : 'internal'
  // A proxy, so that the ledger stays what it is (`instanceof LocalLedger`) with its own
  // methods; each is called on the ledger itself (its private fields are not the proxy's).
  return new Proxy(ledger, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown
      if (typeof value !== 'function') return value
      const method = value as (...args: unknown[]) => unknown
      if (typeof property !== 'string' || !READS.has(property)) return method.bind(target)
      return (...args: unknown[]) => {
        const options = args.find((a): a is { fresh?: boolean } => typeof a === 'object' && a !== null && 'fresh' in a)
        return inSpan(`ledger ${property}`, {
          kind, childOnly: true,
          attributes: { 'kns.ledger.kind': target.kind, 'kns.ledger.fresh': options?.fresh === true },
        }, () => method.apply(target, args) as Promise<unknown>)
      }
    },
  })
}
