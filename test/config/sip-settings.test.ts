/** SIP_LISTEN and its companions: off by default, and one clear ConfigError per bad value. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { ConfigError } from '../../src/errors.ts'

const base = { SIP_LISTEN: '0.0.0.0:5060', SIP_TRUSTED_SOURCES: '192.0.2.10,198.51.100.0/24,2001:db8::/32' }

test('no SIP_LISTEN: no SIP interface at all', () => {
  assert.equal(loadConfig({}).sip, null)
})

test('a full setting is read as given', () => {
  const sip = loadConfig({ ...base, SIP_SIGNING_KEY: '0123456789abcdef', SIP_BLOCK: 'failed,unverified', SIP_REDRESS: 'tel:+18005550100' }).sip
  assert.deepEqual(sip, {
    host: '0.0.0.0', port: 5060, trustedSources: ['192.0.2.10', '198.51.100.0/24', '2001:db8::/32'],
    signingKeyId: '0123456789abcdef', block: ['failed', 'unverified'], redress: 'tel:+18005550100',
  })
  assert.equal(loadConfig({ ...base, SIP_LISTEN: '[::]:5070' }).sip?.host, '::')
})

const refused: Array<[Record<string, string>, RegExp]> = [
  [{ SIP_LISTEN: '5060' }, /SIP_LISTEN must be host:port/],
  [{ SIP_LISTEN: 'sbc.example.com:5060' }, /SIP_LISTEN must be host:port/],
  [{ SIP_LISTEN: '0.0.0.0:70000' }, /SIP_LISTEN/],
  [{ SIP_TRUSTED_SOURCES: '' }, /SIP_TRUSTED_SOURCES is empty/],
  [{ SIP_TRUSTED_SOURCES: '10.0.0.0/33' }, /not an IP address or range/],
  [{ SIP_TRUSTED_SOURCES: 'sbc.example.com' }, /not an IP address or range/],
  [{ SIP_TRUSTED_SOURCES: '0.0.0.0/0' }, /would trust every address/],
  [{ SIP_TRUSTED_SOURCES: '192.0.2.1,::/0' }, /would trust every address/],
  [{ SIP_SIGNING_KEY: 'kns_0123456789abcdef_secret' }, /the id of an API key/],
  [{ SIP_BLOCK: 'everything', SIP_REDRESS: 'https://example.com' }, /SIP_BLOCK lists failed and\/or unverified/],
  [{ SIP_BLOCK: 'failed' }, /set SIP_REDRESS/],
  [{ SIP_REDRESS: 'http://example.com' }, /SIP_REDRESS is an https URL/],
]
for (const [env, message] of refused) {
  test(`refused: ${JSON.stringify(env)}`, () => {
    assert.throws(() => loadConfig({ ...base, ...env }), (err: unknown) => err instanceof ConfigError && message.test(err.message))
  })
}

test('STI_CERT_POLICY: enforce by default; off, warn; anything else refused', () => {
  assert.equal(loadConfig({}).stiCertPolicy, 'enforce')
  assert.equal(loadConfig({ STI_CERT_POLICY: 'warn' }).stiCertPolicy, 'warn')
  assert.throws(() => loadConfig({ STI_CERT_POLICY: 'strict' }), /STI_CERT_POLICY must be one of off, warn, enforce/)
})
