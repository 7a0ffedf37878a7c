/** Searching and sorting the node list, and node page addresses (pure: no DOM). */
import type { MapNode } from './nodes.ts'

export type SortKey = 'name' | 'network' | 'status' | 'detail' | 'uid'

/** The type as the table's column says it. */
export const typeName = (n: MapNode) => (n.network === 'gateway' ? 'Gateway' : 'WiFi')
/** The type in a sentence or a heading (the map's tip, a node's page). */
export const typeLabel = (n: MapNode) => (n.network === 'gateway' ? 'Gateway' : 'WiFi node')

/** The address of a node's page (a fragment: the explorer is one page, served as is). */
export function nodeHref(node: MapNode): string {
  return `#node=${node.network}:${encodeURIComponent(node.uid)}`
}

/** Nodes matching every word of `query` in any of their fields, of the `type` chosen. */
export function matchingNodes(nodes: MapNode[], query: string, type: string): MapNode[] {
  const words = query.toLowerCase().split(/\s+/).filter((w) => w !== '')
  return nodes.filter((n) => (type === 'all' || n.network === type) &&
    words.every((w) => `${n.name} ${n.uid} ${n.detail} ${n.status} ${typeName(n)}`.toLowerCase().includes(w)))
}

const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' })

export function sortNodes(nodes: MapNode[], key: SortKey, descending: boolean): MapNode[] {
  const value = (n: MapNode) => (key === 'network' ? typeName(n) : n[key])
  const sorted = [...nodes].sort((a, b) => collator.compare(value(a), value(b)) || collator.compare(a.uid, b.uid))
  return descending ? sorted.reverse() : sorted
}
