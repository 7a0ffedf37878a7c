/**
 * The node list and the node pages: a table that can be searched, filtered by type and sorted
 * by any column (a list of cards on phones, where five columns do not fit), and one page per
 * node at `#node=<type>:<uid>`, reachable from the table, the map and a shared link.
 */
import { formatInt } from './format.ts'
import { nodeHref, matchingNodes, sortNodes, typeLabel, typeName, type SortKey } from './node-list.ts'
import type { MapNode } from './nodes.ts'

export { nodeHref }

const PAGE = 100

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T

const view = { nodes: [] as MapNode[], shown: PAGE, sort: 'name' as SortKey, descending: false }

function badge(status: string): HTMLSpanElement {
  const span = document.createElement('span')
  span.className = `badge status-${status.toLowerCase()}`
  span.textContent = status
  return span
}

export function emptyRow(columns: number, text: string): HTMLTableRowElement {
  const tr = document.createElement('tr')
  const td = document.createElement('td')
  td.colSpan = columns
  td.className = 'muted'
  td.textContent = text
  tr.append(td)
  return tr
}

export function renderTable(): void {
  const query = $<HTMLInputElement>('node-search').value
  const matching = sortNodes(matchingNodes(view.nodes, query, $<HTMLSelectElement>('node-filter').value), view.sort, view.descending)
  const body = $<HTMLTableElement>('node-table').tBodies[0]!
  // A refresh redraws the rows: a keyboard user on a node's link stays on it.
  const focused = body.contains(document.activeElement) ? document.activeElement?.getAttribute('href') ?? null : null
  body.replaceChildren(...matching.slice(0, view.shown).map((n) => {
    const tr = document.createElement('tr')
    tr.dataset['uid'] = n.uid
    tr.dataset['network'] = n.network
    const cells: Array<[string, string | Node]> = [['Name', ''], ['Type', typeName(n)], ['Status', badge(n.status)], ['Details', n.detail], ['ID', n.uid]]
    for (const [label, content] of cells) {
      const td = document.createElement('td')
      // The column's name, shown beside the value where the table is laid out as cards.
      td.dataset['label'] = label
      if (label === 'Name') {
        const link = document.createElement('a')
        link.href = nodeHref(n)
        link.textContent = n.name
        td.append(link)
      } else {
        td.append(content)
      }
      if (label === 'ID') td.className = 'mono'
      tr.append(td)
    }
    return tr
  }))
  if (focused !== null) body.querySelector<HTMLElement>(`a[href="${CSS.escape(focused)}"]`)?.focus()
  const total = view.nodes.length
  if (matching.length === 0) body.append(emptyRow(5, total === 0 ? 'No nodes yet' : 'No node matches the search'))
  $('node-count').textContent = total === 0 ? '' : matching.length === total
    ? `${formatInt(Math.min(total, view.shown))} of ${formatInt(total)}`
    : `${formatInt(Math.min(matching.length, view.shown))} of ${formatInt(matching.length)} matching (${formatInt(total)} in all)`
  $('node-more').hidden = matching.length <= view.shown
  for (const th of document.querySelectorAll<HTMLElement>('#node-table th[data-sort]')) {
    if (th.dataset['sort'] === view.sort) th.setAttribute('aria-sort', view.descending ? 'descending' : 'ascending')
    else th.removeAttribute('aria-sort')
  }
}

/** The node named by the address's fragment (`#node=<type>:<uid>`), if any and known. */
function nodeInHash(): MapNode | null | undefined {
  const match = /^#node=(gateway|wifi):(.+)$/.exec(location.hash)
  if (match === null) return undefined
  let uid: string
  try { uid = decodeURIComponent(match[2]!) } catch { return null }
  return view.nodes.find((n) => n.network === match[1] && n.uid === uid) ?? null
}

/** Shows the page of the node in the address (or hides it); a node not (or no longer) known says so. */
export function showNodePage(moveFocus: boolean): void {
  const node = nodeInHash()
  const section = $('node-page')
  section.hidden = node === undefined
  if (node === undefined) return
  const heading = $('node-page-heading')
  const facts = $('node-page-facts')
  if (node === null) {
    heading.textContent = 'Node not found'
    const p = document.createElement('p')
    p.textContent = 'No node of this network has this ID. It may have been removed.'
    facts.replaceChildren(p)
  } else {
    heading.textContent = node.name
    const rows: Array<[string, string | Node]> = [
      ['Type', typeLabel(node)], ['Status', badge(node.status)],
      [node.network === 'gateway' ? 'Spectrum' : 'Model and level', node.detail], ['ID', node.uid],
      ['Location', `${node.lat.toFixed(4)}, ${node.lon.toFixed(4)}`],
    ]
    facts.replaceChildren(...rows.map(([label, value]) => {
      const div = document.createElement('div')
      const dt = document.createElement('dt')
      dt.textContent = label
      const dd = document.createElement('dd')
      dd.append(value)
      div.append(dt, dd)
      return div
    }))
  }
  document.title = `${heading.textContent} · Network explorer · KNS`
  if (moveFocus) {
    section.scrollIntoView({ block: 'start' })
    heading.focus({ preventScroll: true })
  }
}

export function setNodes(nodes: MapNode[]): void {
  view.nodes = nodes
  renderTable()
  showNodePage(false)
}

export function wireNodeTable(): void {
  $('node-filter').addEventListener('change', () => { view.shown = PAGE; renderTable() })
  $('node-search').addEventListener('input', () => { view.shown = PAGE; renderTable() })
  $('node-more').addEventListener('click', () => { view.shown += PAGE * 5; renderTable() })
  for (const th of document.querySelectorAll<HTMLElement>('#node-table th[data-sort]')) {
    th.querySelector('button')!.addEventListener('click', () => {
      const key = th.dataset['sort'] as SortKey
      view.descending = view.sort === key ? !view.descending : false
      view.sort = key
      renderTable()
    })
  }
  addEventListener('hashchange', () => {
    if (location.hash.startsWith('#node=')) showNodePage(true)
    else {
      $('node-page').hidden = true
      document.title = 'Network explorer · KNS'
    }
  })
}
