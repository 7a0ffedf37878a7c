/** METRICS_LISTEN: `[host:]port`, the host HOST's unless given (IPv6 in brackets); one clear ConfigError per bad value. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { ConfigError } from '../../src/errors.ts'

test('unset (or empty): undefined, /metrics stays on PORT', () => {
  assert.equal(loadConfig({}).metricsListen, undefined)
  assert.equal(loadConfig({ METRICS_LISTEN: ' ' }).metricsListen, undefined)
})

test('a port alone listens on HOST; a host:port as given; IPv6 in brackets', () => {
  assert.deepEqual(loadConfig({ METRICS_LISTEN: '9464' }).metricsListen, { host: '127.0.0.1', port: 9464 })
  assert.deepEqual(loadConfig({ METRICS_LISTEN: '9464', HOST: '0.0.0.0' }).metricsListen, { host: '0.0.0.0', port: 9464 })
  assert.deepEqual(loadConfig({ METRICS_LISTEN: '10.0.0.5:9464', HOST: '0.0.0.0' }).metricsListen, { host: '10.0.0.5', port: 9464 })
  assert.deepEqual(loadConfig({ METRICS_LISTEN: '[::1]:9464' }).metricsListen, { host: '::1', port: 9464 })
  assert.deepEqual(loadConfig({ METRICS_LISTEN: 'localhost:9464' }).metricsListen, { host: 'localhost', port: 9464 })
})

test('refused, naming the setting and its form', () => {
  for (const value of ['0', '70000', ':9464', '[::1]', '::1:9464', 'metrics.example.com:9464', '10.0.0.5', 'http://10.0.0.5:9464', '9464/metrics']) {
    assert.throws(() => loadConfig({ METRICS_LISTEN: value }), (err: unknown) => err instanceof ConfigError && /^METRICS_LISTEN must be \[host:\]port/.test(err.message), value)
  }
})
