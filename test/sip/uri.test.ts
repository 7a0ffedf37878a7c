/**
 * The URI grammar (src/sip/uri.ts) reads every name-addr and the Request-URI of each INVITE,
 * before any answer, from a source that may be forged: it must take time linear in its input.
 * A tel number written `1-1-1-...x` (16 000 characters) took 0.4 s to refuse, 1.8 s at 30 000
 * (a quadratic regular expression), so one datagram with such a P-Asserted-Identity stalled
 * the server. Timing compared by medians of interleaved samples against a URI of the same
 * length that is read in linear time, with a generous bound (not a timed assertion).
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { validUri } from '../../src/sip/uri.ts'

const LENGTH = 16_000

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** Medians of `validUri` times for `input` and `baseline`, sampled in turns. */
function medians(input: string, baseline: string, samples = 5): { input: number; baseline: number } {
  const times = { input: [] as number[], baseline: [] as number[] }
  for (let i = 0; i < samples; i++) {
    for (const [name, uri] of [['input', input], ['baseline', baseline]] as const) {
      const start = process.hrtime.bigint()
      validUri(uri)
      times[name].push(Number(process.hrtime.bigint() - start))
    }
  }
  return { input: median(times.input), baseline: median(times.baseline) }
}

test('the grammar refuses long malformed URIs in linear time (a tel number of separators and digits was quadratic)', () => {
  const baseline = `sip:${'a'.repeat(LENGTH)}@carrier.example`
  assert.ok(validUri(baseline))
  const slow = [
    `tel:+${'1-'.repeat(LENGTH / 2)}x`,
    `tel:${'1-'.repeat(LENGTH / 2)}x`,
    `tel:${'1'.repeat(LENGTH)}x`,
    `tel:+${'('.repeat(LENGTH)}`,
    `sip:${'a;'.repeat(LENGTH / 2)}@carrier.example"`,
    `sip:carrier.example;${'a=b;'.repeat(LENGTH / 4)}"`,
  ]
  for (const uri of slow) {
    assert.equal(validUri(uri), false, uri.slice(0, 20))
    const { input, baseline: base } = medians(uri, baseline)
    // Linear: about the baseline's time; the quadratic form took thousands of times longer.
    assert.ok(input < base * 50 + 20_000_000, `${uri.slice(0, 20)}...: ${(input / 1e6).toFixed(2)} ms against ${(base / 1e6).toFixed(2)} ms`)
  }
})

test('tel numbers: global ones need a digit after +, local ones a hex digit, * or #; visual separators allowed around them', () => {
  for (const uri of ['tel:+12025550142', 'tel:+1-202-555-0142', 'tel:+1(202)555.0142', 'tel:5550142;phone-context=+1202', 'tel:*67;phone-context=example.com', 'tel:#31#;phone-context=example.com']) {
    assert.ok(validUri(uri), uri)
  }
  for (const uri of ['tel:+', 'tel:+-.()', 'tel:', 'tel:-.()', 'tel:+12025550142x', 'tel:+1 202']) assert.equal(validUri(uri), false, uri)
})

test('hosts as real SBCs write them are read, a second URI never is', () => {
  for (const uri of ['sip:+12025550142@sbc_1.carrier.net', 'sip:+12025550142@_edge.example:5060;user=phone', 'sip:+12025550142@[2001:db8::1]:5061', 'SIP:+12025550142@Carrier.NET']) {
    assert.equal(validUri(uri), true, uri)
  }
  for (const uri of ['sip:+12025550142@x,<sip:+18005550100@bank.example', 'sip:+12025550142@bad host.example', 'sip:+12025550142@sbc_1.carrier.net>', 'sip:+12025550142@-sbc.example', 'sip:+12025550142@1.2.3']) {
    assert.equal(validUri(uri), false, uri)
  }
})
