/**
 * sipp (Debian's sip-tester) as the SBC in the SIP tests: a scenario per call shape, made
 * here (an INVITE with the headers a test chooses, the answer it expects, the ACK a non-2xx
 * final response needs), run against the server, and the messages it exchanged read back
 * from its message log.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export function sippMissing(): string | undefined {
  return spawnSync('sipp', ['-v'], { stdio: 'ignore' }).error === undefined ? undefined : 'sipp (Debian sip-tester) is not installed: .ci/run installs it'
}

export interface SippCall {
  /** The Request-URI's user part: the called number. */
  to: string
  /** The Request-URI's parameters: `;user=phone`, `;sti=as`. */
  uriParams?: string
  from: string
  /** Extra header lines of the INVITE (Identity, P-Asserted-Identity, Diversion, ...). */
  headers?: string[]
  /** The final response the scenario expects (302, 603, 403, ...). */
  expect: number
}

export interface SippResult {
  code: number | null
  stderr: string
  /** The (last) final response as received: status line and header fields (lower-case names, every value). */
  response: SipResponseSeen | undefined
  /** Every final response received, in order (several with `calls`). */
  responses: SipResponseSeen[]
}

export interface SipResponseSeen { status: number; headers: Map<string, string[]> }

/** Where sipp sends from and to: the loopback by default; a cluster test's addresses otherwise. */
export interface SippTarget {
  host?: string
  /** The local address sipp binds (and puts in Via, From, Contact). */
  localIp?: string
  /** Calls to make, one after the other (sipp -m). */
  calls?: number
}

function scenario(call: SippCall): string {
  const invite = [
    `INVITE sip:${call.to}@[remote_ip]:[remote_port]${call.uriParams ?? ''} SIP/2.0`,
    'Via: SIP/2.0/[transport] [local_ip]:[local_port];rport;branch=[branch]',
    `From: <sip:${call.from}@[local_ip]:[local_port];user=phone>;tag=[pid]SIPpTag00[call_number]`,
    `To: <sip:${call.to}@[remote_ip]:[remote_port]>`,
    'Call-ID: [call_id]',
    'CSeq: 1 INVITE',
    'Contact: <sip:sipp@[local_ip]:[local_port]>',
    'Max-Forwards: 70',
    ...(call.headers ?? []),
    'Content-Length: 0',
  ].join('\n')
  const ack = [
    `ACK sip:${call.to}@[remote_ip]:[remote_port]${call.uriParams ?? ''} SIP/2.0`,
    '[last_Via:]',
    '[last_From:]',
    '[last_To:]',
    '[last_Call-ID:]',
    'CSeq: 1 ACK',
    'Max-Forwards: 70',
    'Content-Length: 0',
  ].join('\n')
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<scenario name="kns redirect">
  <send retrans="500"><![CDATA[
${invite}

]]></send>
  <recv response="100" optional="true"/>
  <recv response="${call.expect}"/>
  <send><![CDATA[
${ack}

]]></send>
</scenario>
`
}

/** The final responses in sipp's message log, in order. */
function finalResponses(log: string): SipResponseSeen[] {
  const blocks = log.split(/\n(?=-{5,}|\S.*message (?:received|sent))/)
  const found: SipResponseSeen[] = []
  for (const block of blocks) {
    const start = block.indexOf('SIP/2.0 ')
    if (start === -1) continue
    const text = block.slice(start).replace(/\r/g, '')
    const status = Number(/^SIP\/2\.0 (\d{3})/.exec(text)?.[1])
    if (!Number.isFinite(status) || status < 200) continue
    const headers = new Map<string, string[]>()
    for (const line of text.split('\n').slice(1)) {
      if (line.trim() === '') break
      const colon = line.indexOf(':')
      if (colon === -1) continue
      const name = line.slice(0, colon).trim().toLowerCase()
      headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()])
    }
    found.push({ status, headers })
  }
  return found
}

/** One call (or `target.calls`) through sipp (UDP `u1` or TCP `t1`) to 127.0.0.1:port or `target.host`:port. */
export async function runSipp(port: number, call: SippCall, transport: 'u1' | 't1' = 'u1', target: SippTarget = {}): Promise<SippResult> {
  const host = target.host ?? '127.0.0.1'
  const calls = target.calls ?? 1
  const dir = mkdtempSync(join(tmpdir(), 'kns-sipp-'))
  try {
    const file = join(dir, 'scenario.xml')
    const log = join(dir, 'messages.log')
    writeFileSync(file, scenario(call))
    const child = spawn('sipp', [`${host}:${port}`, '-sf', file, '-m', String(calls), '-t', transport, '-i', target.localIp ?? '127.0.0.1', '-nostdin',
      '-timeout', `${10 * calls}s`, '-timeout_error', '-recv_timeout', '5000', '-trace_msg', '-message_file', log], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    let messages = ''
    try {
      messages = readFileSync(log, 'utf8')
    } catch {
      // no log: sipp failed before any message
    }
    const responses = finalResponses(messages)
    return { code, stderr, response: responses.at(-1), responses }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
