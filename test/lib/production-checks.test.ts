/**
 * What must not reach production: each finding for its setting, with its fix; none for a
 * production configuration.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { isLocalHost, productionFindings, type ProductionFacts } from '../../src/lib/production-checks.ts'

const PRODUCTION = {
  KNS_SECRET: 'production-secret-0123456789abcdef-0123', SMS_DELIVERY: 'http', SMS_HTTP_URL: 'https://sms.example.com/send',
  PUBLIC_BASE_URL: 'https://kns.example.com', METRICS_LISTEN: '127.0.0.1:9464',
}
const facts = (config: ReturnType<typeof loadConfig>, extra: Partial<ProductionFacts> = {}): ProductionFacts =>
  ({ publicBaseUrl: config.publicBaseUrl, zkLoginIssuer: config.zkLoginIssuer, developmentKeyId: null, ...extra })

test('a production configuration: no finding', () => {
  const config = loadConfig(PRODUCTION)
  assert.deepEqual(productionFindings(config, facts(config)), [])
})

test('the development defaults: every finding, each naming its fix', () => {
  const config = loadConfig({ X5U_ALLOW_HTTP: 'true', X5U_ALLOW_PRIVATE: 'true', WEBHOOK_ALLOW_PRIVATE: 'true' })
  const found = productionFindings(config, facts(config, { developmentKeyId: '0123456789abcdef' }))
  assert.deepEqual(found.map((f) => f.name), ['SMS_DELIVERY', 'KNS_SECRET', 'development key', 'X5U_ALLOW_HTTP', 'X5U_ALLOW_PRIVATE', 'WEBHOOK_ALLOW_PRIVATE', 'PUBLIC_BASE_URL', 'ZKLOGIN_ISSUER', 'METRICS_LISTEN'])
  const detail = (name: string) => found.find((f) => f.name === name)!.detail
  assert.match(detail('SMS_DELIVERY'), /set SMS_DELIVERY=smpp/)
  assert.match(detail('KNS_SECRET'), /Set KNS_SECRET/)
  assert.match(detail('development key'), /npx kns api-key revoke 0123456789abcdef/)
  assert.match(detail('X5U_ALLOW_HTTP'), /unset it/)
  assert.match(detail('PUBLIC_BASE_URL'), /PUBLIC_BASE_URL is not set: .* http:\/\/localhost:8080, which is not https\. Set it/)
  assert.match(detail('ZKLOGIN_ISSUER'), /http:\/\/localhost:8080\/oidc is not https: .*kns oidc repin-issuer/)
  assert.match(detail('METRICS_LISTEN'), /set METRICS_LISTEN=\[host:\]port/)
})

test('https on this machine is no public URL either; the pinned issuer is judged, not the configured default', () => {
  const config = loadConfig({ ...PRODUCTION, PUBLIC_BASE_URL: 'https://127.0.0.1:8443' })
  assert.match(productionFindings(config, facts(config)).map((f) => f.detail).join('\n'), /PUBLIC_BASE_URL https:\/\/127\.0\.0\.1:8443 names this machine/)
  const pinned = loadConfig(PRODUCTION)
  assert.deepEqual(productionFindings(pinned, facts(pinned, { zkLoginIssuer: 'https://localhost/oidc' })).map((f) => f.name), ['ZKLOGIN_ISSUER'])
})

test('isLocalHost: localhost names, loopback and unspecified addresses', () => {
  for (const host of ['localhost', 'LOCALHOST', 'kns.localhost', '127.0.0.1', '127.8.9.1', '[::1]', '::1', '0.0.0.0', '[::]']) assert.equal(isLocalHost(host), true, host)
  for (const host of ['kns.example.com', '10.0.0.1', '[2001:db8::1]', 'localhost.example.com']) assert.equal(isLocalHost(host), false, host)
})
