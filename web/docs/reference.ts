/**
 * The API reference, drawn from the service's own OpenAPI 3.1 document (`/openapi.json`, made
 * from the route schemas): every operation by tag, its parameters, body and answers, with the
 * descriptions' Markdown subset (paragraphs, `- ` and `* ` lists, indented code, `code`, **bold**),
 * the allowed values of every enumeration, each operation's examples and a curl line to try it.
 * Everything is built with createElement and textContent: nothing in the document becomes HTML.
 */

import { anchorOf } from './anchor.ts'

type Schema = Record<string, unknown> & {
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
  $ref?: string
  description?: string
}

interface Example { summary?: string; value?: unknown }
interface MediaType { schema?: Schema; examples?: Record<string, Example> }
interface Parameter { name: string; in: string; required?: boolean; description?: string; schema?: Schema; examples?: Record<string, Example> }
interface Operation {
  summary?: string
  description?: string
  tags?: string[]
  operationId?: string
  parameters?: Parameter[]
  security?: unknown[]
  requestBody?: { required?: boolean; content?: Record<string, MediaType> }
  responses?: Record<string, { description?: string; content?: Record<string, MediaType> }>
}
export interface OpenApiDocument {
  info: { title: string; version: string; description?: string }
  tags?: Array<{ name: string; description?: string }>
  servers?: Array<{ url: string }>
  paths: Record<string, Record<string, Operation>>
  components?: { schemas?: Record<string, Schema>; securitySchemes?: Record<string, { type?: string; in?: string; name?: string }> }
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const
/** Nested schemas deeper than this are summarized: a reference, not a schema browser. */
const MAX_DEPTH = 6

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, options: { className?: string; text?: string; id?: string } = {}, ...children: Array<Node | string>): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag)
  if (options.className) node.className = options.className
  if (options.id) node.id = options.id
  if (options.text !== undefined) node.textContent = options.text
  node.append(...children)
  return node
}

/** `code` and **bold** within a line, as nodes. */
export function inline(text: string): Node[] {
  const nodes: Node[] = []
  for (const [i, part] of text.split('`').entries()) {
    if (i % 2 === 1) {
      nodes.push(h('code', { text: part }))
      continue
    }
    for (const [j, piece] of part.split('**').entries()) {
      if (piece === '') continue
      nodes.push(j % 2 === 1 ? h('strong', { text: piece }) : document.createTextNode(piece))
    }
  }
  return nodes
}

/** The descriptions' Markdown subset, as block nodes. */
export function markdown(text: string): Node[] {
  const blocks: Node[] = []
  for (const chunk of text.split(/\n\s*\n/)) {
    const lines = chunk.split('\n')
    if (lines.every((l) => /^ {4}/.test(l) || l.trim() === '')) {
      const pre = h('pre', {}, h('code', { text: lines.map((l) => l.slice(4)).join('\n') }))
      // It may scroll sideways on a phone: reachable by keyboard too.
      pre.tabIndex = 0
      blocks.push(pre)
    } else if (/^\s*[-*] /.test(lines[0]!)) {
      // Items start with a mark; other lines continue the item before.
      const items: string[] = []
      for (const line of lines) {
        if (/^\s*[-*] /.test(line)) items.push(line.replace(/^\s*[-*] /, ''))
        else items[items.length - 1] += ` ${line.trim()}`
      }
      blocks.push(h('ul', {}, ...items.map((item) => h('li', {}, ...inline(item)))))
    } else {
      blocks.push(h('p', {}, ...inline(chunk.replace(/\n/g, ' '))))
    }
  }
  return blocks
}

function resolve(schema: Schema, doc: OpenApiDocument): Schema {
  const ref = schema.$ref
  if (typeof ref !== 'string') return schema
  const name = ref.split('/').at(-1) ?? ''
  return doc.components?.schemas?.[name] ?? { description: `(${ref})` }
}

/**
 * The values a schema allows, when it lists them: an `enum`, a `const`, or a union of those
 * (how a union of literals is written); null for any other schema.
 */
export function allowedValues(schema: Schema, doc: OpenApiDocument): unknown[] | null {
  const s = resolve(schema, doc)
  if (Array.isArray(s.enum)) return s.enum
  if ('const' in s) return [s.const]
  const variants = s.anyOf ?? s.oneOf
  if (!variants || variants.length === 0) return null
  const each = variants.map((v) => allowedValues(v, doc))
  return each.every((values) => values !== null) ? [...new Set(each.flat())] : null
}

/** A schema's type in a few words: `string`, `array of object`, `integer | null`. */
export function typeLabel(schema: Schema, doc: OpenApiDocument): string {
  const s = resolve(schema, doc)
  const variants = s.anyOf ?? s.oneOf
  // Alike variants (the literals of an enumeration) read once: `string`, not `string | string`.
  if (variants) return [...new Set(variants.map((v) => typeLabel(v, doc)))].join(' | ')
  if ('const' in s && s.type === undefined) return JSON.stringify(s.const)
  if (Array.isArray(s.type)) return s.type.join(' | ')
  if (s.type === 'array' && s.items) return `array of ${typeLabel(s.items, doc)}`
  return s.type ?? (s.properties ? 'object' : 'any')
}

/** What a value must be, beyond its type and allowed values: lengths, ranges, format. Long patterns are left to the document. */
export function rules(schema: Schema): string[] {
  const out: string[] = []
  const n = (key: string) => (typeof schema[key] === 'number' ? schema[key] as number : undefined)
  const [minL, maxL, min, max, minI, maxI] = [n('minLength'), n('maxLength'), n('minimum'), n('maximum'), n('minItems'), n('maxItems')]
  if (minL !== undefined || maxL !== undefined) out.push(minL === maxL ? `exactly ${minL} characters` : `${minL ?? 0}-${maxL ?? '∞'} characters`)
  if (min !== undefined || max !== undefined) out.push(`${min ?? '-∞'} to ${max ?? '∞'}`)
  if (minI !== undefined || maxI !== undefined) out.push(`${minI ?? 0}-${maxI ?? '∞'} items`)
  if (typeof schema.format === 'string') out.push(`format ${schema.format}`)
  if (typeof schema.pattern === 'string' && schema.pattern.length <= 40) out.push(`pattern ${schema.pattern}`)
  return out
}

function fieldItem(name: string | null, schema: Schema, required: boolean, doc: OpenApiDocument, depth: number): HTMLLIElement {
  const s = resolve(schema, doc)
  const head = h('div', { className: 'field-head' })
  if (name !== null) head.append(h('code', { text: name }))
  head.append(h('span', { className: 'type', text: typeLabel(s, doc) }))
  if (required) head.append(h('span', { className: 'required', text: 'required' }))
  // The allowed values next to the type: they are the type, in effect.
  const allowed = allowedValues(s, doc)
  const itemsAllowed = allowed === null && s.type === 'array' && s.items ? allowedValues(s.items, doc) : null
  if (allowed !== null) head.append(valueList('Allowed values: ', allowed))
  else if (itemsAllowed !== null) head.append(valueList('Each item one of: ', itemsAllowed))
  const item = h('li', {}, head)
  if (s.description) item.append(h('p', {}, ...inline(s.description)))
  const constraints = rules(s)
  if (constraints.length > 0) item.append(h('p', { className: 'rules', text: constraints.join(' · ') }))
  const nested = schemaFields(s.type === 'array' && s.items ? resolve(s.items, doc) : s, doc, depth + 1)
  if (nested !== null) item.append(nested)
  return item
}

/** `label` and each value as code (strings as written in JSON, so `"true"` and `true` differ). */
function valueList(label: string, values: unknown[]): HTMLSpanElement {
  const list = h('span', { className: 'allowed' }, label)
  for (const [i, value] of values.entries()) {
    if (i > 0) list.append(', ')
    list.append(h('code', { text: JSON.stringify(value) }))
  }
  return list
}

/** An object's fields (or a union's variants) as a list; null when there is nothing inside to show. */
export function schemaFields(schema: Schema, doc: OpenApiDocument, depth = 0): HTMLUListElement | null {
  if (depth > MAX_DEPTH) return null
  const s = resolve(schema, doc)
  const variants = (s.anyOf ?? s.oneOf)?.map((v) => resolve(v, doc)).filter((v) => v.properties)
  if (variants && variants.length > 0) {
    return h('ul', { className: 'fields' }, ...variants.map((v, i) => fieldItem(`variant ${i + 1}`, v, false, doc, depth)))
  }
  const properties = Object.entries(s.properties ?? {})
  if (properties.length === 0) return null
  const required = new Set(s.required ?? [])
  return h('ul', { className: 'fields' }, ...properties.map(([name, p]) => fieldItem(name, p, required.has(name), doc, depth)))
}

function bodyMedia(content: Record<string, MediaType> | undefined): MediaType | undefined {
  return content?.['application/json'] ?? Object.values(content ?? {})[0]
}

function bodySchema(content: Record<string, MediaType> | undefined): Schema | undefined {
  return bodyMedia(content)?.schema
}

/** The value of the first of `examples`, if there is one. */
function exampleValue(examples: Record<string, Example> | undefined): unknown {
  return Object.values(examples ?? {})[0]?.value
}

/** A word for the shell: single-quoted, any `'` closed, escaped and reopened. */
function shellWord(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`
}

/** The headers the operation's security requirement asks for, with a placeholder for the secret (an API key, or an access token). */
function authHeaders(op: Operation, doc: OpenApiDocument): string[] {
  const requirement = (op.security?.[0] ?? {}) as Record<string, unknown>
  return Object.keys(requirement).flatMap((name) => {
    const scheme = doc.components?.securitySchemes?.[name]
    if (scheme?.type === 'apiKey' && scheme.in === 'header' && scheme.name) return [`"${scheme.name}: $KNS_API_KEY"`]
    if (scheme?.type === 'openIdConnect' || scheme?.type === 'oauth2') return ['"Authorization: Bearer $ACCESS_TOKEN"']
    return []
  })
}

/**
 * What the operation's security asks for, in words: an API key, or an access token with the
 * scopes of one of its requirements (OpenAPI: the scopes of one requirement all, any one requirement).
 */
function authLabel(op: Operation, doc: OpenApiDocument): string | null {
  const requirements = (op.security ?? []) as Array<Record<string, string[]>>
  if (requirements.length === 0) return null
  const tokens = requirements.filter((r) => Object.keys(r).some((name) => ['openIdConnect', 'oauth2'].includes(doc.components?.securitySchemes?.[name]?.type ?? '')))
  if (tokens.length === 0) return 'needs an x-api-key'
  const scopes = tokens.map((r) => Object.values(r).flat().join(' and ')).filter((text) => text !== '')
  return `needs an access token (Authorization: Bearer)${scopes.length === 0 ? '' : ` with the scopes ${scopes.join(', or ')}`}`
}

/**
 * A curl command for the operation at `base`: the path and query with the parameters'
 * examples, the header its security needs (the key from $KNS_API_KEY, the token from
 * $ACCESS_TOKEN) and the example body.
 */
export function curlCommand(method: string, path: string, op: Operation, doc: OpenApiDocument, base: string): string {
  const params = op.parameters ?? []
  const example = (where: string, name: string) => exampleValue(params.find((p) => p.in === where && p.name === name)?.examples)
  let url = path.replace(/\{([^}]+)\}/g, (whole, name: string) => {
    const value = example('path', name)
    return value === undefined ? whole : encodeURIComponent(String(value))
  })
  const query = params.filter((p) => p.in === 'query' && exampleValue(p.examples) !== undefined)
    .map((p) => `${encodeURIComponent(p.name)}=${encodeURIComponent(String(exampleValue(p.examples)))}`)
  if (query.length > 0) url += `?${query.join('&')}`
  const lines = [`curl${method === 'get' ? '' : ` -X ${method.toUpperCase()}`} ${shellWord(`${base.replace(/\/+$/, '')}${url}`)}`]
  for (const header of authHeaders(op, doc)) lines.push(`-H ${header}`)
  const body = exampleValue(bodyMedia(op.requestBody?.content)?.examples)
  if (body !== undefined) lines.push(`-H 'content-type: application/json'`, `-d ${shellWord(JSON.stringify(body))}`)
  return lines.join(' \\\n  ')
}

/** A labelled block of code (a command, a JSON value), reachable by keyboard when it scrolls sideways. */
function codeBlock(label: string, text: string, className: string): HTMLElement {
  const pre = h('pre', { className }, h('code', { text }))
  pre.tabIndex = 0
  pre.setAttribute('aria-label', label)
  return pre
}

/** An example value as shown: JSON, indented, a list of plain values on one line; a string (a PEM file) as it is. */
export function exampleText(value: unknown, indent = ''): string {
  if (typeof value === 'string' && indent === '') return value
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  const inner = `${indent}  `
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]'
    // Plain values, or short tuples of them ([time, value] of a series), on one line.
    const plain = (v: unknown) => v === null || typeof v !== 'object'
    if (value.every((v) => plain(v) || (Array.isArray(v) && v.every(plain)))) {
      const line = (v: unknown): string => (Array.isArray(v) ? `[${v.map(line).join(', ')}]` : JSON.stringify(v))
      return line(value)
    }
    return `[\n${value.map((v) => `${inner}${exampleText(v, inner)}`).join(',\n')}\n${indent}]`
  }
  const entries = Object.entries(value)
  if (entries.length === 0) return '{}'
  return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${exampleText(v, inner)}`).join(',\n')}\n${indent}}`
}

function operationCard(method: string, path: string, op: Operation, doc: OpenApiDocument, base: string): HTMLElement {
  const card = h('article', { className: 'op', id: anchorOf(method, path) })
  card.append(h('h3', {}, h('span', { className: `method method-${method}`, text: method.toUpperCase() }), h('code', { text: path })))
  if (op.summary) card.append(h('p', { className: 'summary' }, ...inline(op.summary)))
  const auth = authLabel(op, doc)
  if (auth !== null) card.append(h('span', { className: 'auth', text: auth }))
  if (op.description) card.append(h('div', { className: 'op-text' }, ...markdown(op.description)))
  const params = op.parameters ?? []
  for (const where of ['path', 'query', 'header'] as const) {
    const here = params.filter((p) => p.in === where)
    if (here.length === 0) continue
    card.append(h('h4', { text: `${where[0]!.toUpperCase()}${where.slice(1)} parameters` }),
      h('ul', { className: 'fields' }, ...here.map((p) => fieldItem(p.name, { ...(p.schema ?? {}), ...(p.description ? { description: p.description } : {}) }, p.required === true, doc, 0))))
  }
  const body = bodySchema(op.requestBody?.content)
  if (body) {
    card.append(h('h4', { text: `Request body (${typeLabel(body, doc)})` }))
    const fields = schemaFields(body, doc)
    if (fields) card.append(fields)
    else if (body.description) card.append(h('p', {}, ...inline(body.description)))
  }
  card.append(h('h4', { text: 'Example request' }), codeBlock(`Example request: curl command for ${method.toUpperCase()} ${path}`, curlCommand(method, path, op, doc, base), 'example curl'))
  const answered = Object.entries(op.responses ?? {}).find(([status, answer]) => /^2/.test(status) && exampleValue(bodyMedia(answer.content)?.examples) !== undefined)
  if (answered) {
    const [status, answer] = answered
    // Folded like the answers' fields: some examples are long, the curl line is what is read first.
    card.append(h('details', { className: 'response' },
      h('summary', {}, h('span', { className: 'example-heading', text: `Example answer (${status})` })),
      codeBlock(`Example answer ${status} of ${method.toUpperCase()} ${path}`, exampleText(exampleValue(bodyMedia(answer.content)?.examples)), 'example answer')))
  }
  const responses = Object.entries(op.responses ?? {})
  if (responses.length > 0) {
    card.append(h('h4', { text: 'Answers' }))
    for (const [status, answer] of responses) {
      const schema = bodySchema(answer.content)
      // The CAMARA routes answer their errors in CAMARA's shape, the rest in the service's.
      const names = schema ? Object.keys(resolve(schema, doc).properties ?? {}) : []
      const shape = names.includes('status') && !names.includes('success') ? 'CAMARA\'s error shape' : 'the service\'s error shape'
      const label = status === '4XX' ? `client errors, in ${shape}` : status === '5XX' ? `server errors, in ${shape}`
        : answer.description && answer.description !== 'Default Response' ? answer.description : ''
      const summary = h('summary', {}, h('span', { className: 'status', text: status }), ` ${schema ? typeLabel(schema, doc) : 'no body'}${label ? ` · ${label}` : ''}`)
      const box = h('details', { className: 'response' }, summary)
      const fields = schema ? schemaFields(schema, doc) : null
      if (fields) box.append(fields)
      else box.append(h('p', { className: 'rules', text: schema?.description ?? 'Nothing more to show.' }))
      card.append(box)
    }
  }
  return card
}

/** The operations by tag, in the document's tag order (then any other tag, then untagged). */
export function groupByTag(doc: OpenApiDocument): Array<{ tag: string; description?: string; ops: Array<{ method: string; path: string; op: Operation }> }> {
  const groups = new Map<string, Array<{ method: string; path: string; op: Operation }>>()
  for (const t of doc.tags ?? []) groups.set(t.name, [])
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method]
      if (op === undefined) continue
      const tag = op.tags?.[0] ?? 'other'
      if (!groups.has(tag)) groups.set(tag, [])
      groups.get(tag)!.push({ method, path, op })
    }
  }
  const described = new Map((doc.tags ?? []).map((t) => [t.name, t.description]))
  return [...groups].filter(([, ops]) => ops.length > 0).map(([tag, ops]) => ({ tag, ...(described.get(tag) ? { description: described.get(tag)! } : {}), ops }))
}

/** Draws the whole reference into `main` and its contents into `contents`. */
export function renderReference(doc: OpenApiDocument, main: HTMLElement, contents: HTMLElement): void {
  // The curl lines address the server the document names (PUBLIC_BASE_URL), else this page's.
  const base = doc.servers?.[0]?.url ?? location.origin
  const intro = h('section', { className: 'intro' }, h('h1', { text: doc.info.title }), h('p', { className: 'tag-text', text: `Version ${doc.info.version}` }))
  if (doc.info.description) intro.append(...markdown(doc.info.description))
  const parts: Node[] = [intro]
  const nav: Node[] = []
  for (const group of groupByTag(doc)) {
    const id = `tag-${group.tag.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}`
    const section = h('section', { id }, h('h2', { className: 'tag-heading', text: group.tag }))
    if (group.description) section.append(h('p', { className: 'tag-text' }, ...inline(group.description)))
    section.append(...group.ops.map(({ method, path, op }) => operationCard(method, path, op, doc, base)))
    parts.push(section)
    const links = group.ops.map(({ method, path, op }) => {
      const link = h('a', {}, h('span', { className: `method method-${method}`, text: method.toUpperCase() }), h('span', {}, ...inline(op.summary ?? path)))
      link.href = `#${anchorOf(method, path)}`
      link.title = path
      return h('li', {}, link)
    })
    nav.push(h('h2', { text: group.tag }), h('ul', {}, ...links))
  }
  main.replaceChildren(...parts)
  contents.replaceChildren(...nav)
}
