/** The client a per-address limit counts: IPv4 as it is, IPv6 by its /64, in any spelling. */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { addressGroup } from '../../src/lib/client-address.ts'

test('IPv4 addresses are their own group, mapped or not', () => {
  assert.equal(addressGroup('192.0.2.1'), '192.0.2.1')
  assert.equal(addressGroup('::ffff:192.0.2.1'), '192.0.2.1')
  assert.equal(addressGroup('::FFFF:192.0.2.1'), '192.0.2.1')
  for (const spelling of ['::ffff:c000:201', '0:0:0:0:0:ffff:192.0.2.1', '0000:0000:0000:0000:0000:FFFF:C000:0201', '::ffff:192.0.2.1%eth0']) {
    assert.equal(addressGroup(spelling), '192.0.2.1', spelling)
  }
  assert.notEqual(addressGroup('::ffff:c000:202'), addressGroup('::ffff:c000:201'))
  assert.notEqual(addressGroup('192.0.2.1'), addressGroup('192.0.2.2'))
})

test('IPv6 addresses are grouped by their /64, however they are written', () => {
  const group = addressGroup('2001:db8:1:2::1')
  assert.equal(group, '2001:db8:1:2::/64')
  for (const same of ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0DB8:0001:0002:0:0:0:9', '2001:db8:1:2::1.2.3.4', '2001:db8:1:2::1%eth0']) {
    assert.equal(addressGroup(same), group, same)
  }
  for (const other of ['2001:db8:1:3::1', '2001:db8::1', '::1']) assert.notEqual(addressGroup(other), group, other)
  assert.equal(addressGroup('2001:db8::'), '2001:db8:0:0::/64')
  assert.equal(addressGroup('::'), '0:0:0:0::/64')
})

test('anything else keys a group of its own, unchanged', () => {
  assert.equal(addressGroup('unknown'), 'unknown')
  assert.equal(addressGroup(''), '')
})
