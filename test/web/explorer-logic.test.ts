/**
 * The explorer's pure logic, without a browser: map clustering, node search and sort, changes
 * against the period before, and where the charts put their date labels.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { clusterNodes, spreadOf } from '../../web/explorer/cluster.ts'
import { formatChange, previousLabel, previousPeriod, tickIndices } from '../../web/explorer/format.ts'
import { matchingNodes, nodeHref, sortNodes } from '../../web/explorer/node-list.ts'
import type { MapNode } from '../../web/explorer/nodes.ts'

describe('map clustering', () => {
  const point = fc.record({ x: fc.double({ min: 0, max: 960, noNaN: true }), y: fc.double({ min: 0, max: 500, noNaN: true }) })

  test('every point is in exactly one cluster, and cluster seeds are a target apart (targets never overlap)', () => {
    fc.assert(fc.property(fc.array(point, { maxLength: 300 }), fc.double({ min: 5, max: 80, noNaN: true }), (points, distance) => {
      const clusters = clusterNodes(points.map((p, i) => ({ ...p, item: i, origin: p })), distance)
      assert.deepEqual(clusters.flatMap((c) => c.items).sort((a, b) => a - b), points.map((_, i) => i))
      for (let i = 0; i < clusters.length; i++) {
        for (let j = i + 1; j < clusters.length; j++) {
          assert.ok(Math.hypot(clusters[i]!.x - clusters[j]!.x, clusters[i]!.y - clusters[j]!.y) >= distance)
        }
      }
    }))
  })

  test('points on one spot are one cluster of spread 0; apart, they are not', () => {
    const spot = Array.from({ length: 7 }, (_, i) => ({ x: 100, y: 100, item: i, origin: { x: 100, y: 100 } }))
    const [cluster, ...rest] = clusterNodes([...spot, { x: 300, y: 100, item: 7, origin: { x: 300, y: 100 } }], 28)
    assert.equal(cluster!.items.length, 7)
    assert.equal(spreadOf(cluster!.origins), 0)
    assert.deepEqual(rest.map((c) => c.items), [[7]])
  })
})

describe('node search and sort', () => {
  const node = (network: 'gateway' | 'wifi', uid: string, name: string, status: string, detail: string): MapNode =>
    ({ network, uid, name, status, detail, lat: 0, lon: 0 })
  const nodes = [
    node('wifi', 'wifi-10', 'Tokyo Station AP 10', 'Online', 'KNS-AP2 · WiFi 6'),
    node('wifi', 'wifi-2', 'Tokyo Station AP 2', 'Offline', 'KNS-AP2 · WiFi 6'),
    node('gateway', 'gw-1', 'Berlin, DE', 'Pending', 'CBRS band 48'),
  ]

  test('every word must match some field, case-insensitively; the type filter applies too', () => {
    assert.deepEqual(matchingNodes(nodes, 'tokyo OFFLINE', 'all').map((n) => n.uid), ['wifi-2'])
    assert.deepEqual(matchingNodes(nodes, 'cbrs', 'all').map((n) => n.uid), ['gw-1'])
    assert.deepEqual(matchingNodes(nodes, 'gateway', 'all').map((n) => n.uid), ['gw-1'])
    assert.deepEqual(matchingNodes(nodes, '', 'wifi').map((n) => n.uid), ['wifi-10', 'wifi-2'])
    assert.deepEqual(matchingNodes(nodes, 'tokyo', 'gateway'), [])
  })

  test('sorting is natural (AP 2 before AP 10) and reverses', () => {
    assert.deepEqual(sortNodes(nodes, 'name', false).map((n) => n.uid), ['gw-1', 'wifi-2', 'wifi-10'])
    assert.deepEqual(sortNodes(nodes, 'name', true).map((n) => n.uid), ['wifi-10', 'wifi-2', 'gw-1'])
    assert.deepEqual(sortNodes(nodes, 'status', false).map((n) => n.status), ['Offline', 'Online', 'Pending'])
  })

  test('a node page address names the type and the (encoded) ID', () => {
    assert.equal(nodeHref(node('wifi', 'ap #1/x', 'n', 'Online', '')), '#node=wifi:ap%20%231%2Fx')
  })
})

describe('changes against the period before', () => {
  test('formatChange', () => {
    assert.equal(formatChange(0, 0), '')
    assert.equal(formatChange(5, 0), 'new')
    assert.equal(formatChange(100, 100), 'no change')
    assert.equal(formatChange(112, 100), '▲ 12%')
    assert.equal(formatChange(97, 100), '▼ 3%')
    assert.equal(formatChange(1025, 1000), '▲ 2.5%')
    assert.equal(formatChange(60_000, 1000), '▲ 5,900%')
    assert.equal(formatChange(0, 10), '▼ 100%')
  })

  test('the period before has the same length and ends where the period starts', () => {
    const period = { start: '2026-11-01T00:00:00.000Z', end: '2026-11-08T00:00:00.000Z' }
    assert.deepEqual(previousPeriod(period), { start: '2026-10-25T00:00:00.000Z', end: '2026-11-01T00:00:00.000Z' })
    assert.equal(previousLabel(7 * 86_400_000), 'the 7 days before')
    assert.equal(previousLabel(86_400_000), 'the 24 hours before')
  })
})

describe('chart date labels', () => {
  test('first and last always, evenly spread, as many as fit (96 px each), never more than the buckets', () => {
    assert.deepEqual(tickIndices(31, 300), [0, 10, 20, 30])
    assert.deepEqual(tickIndices(31, 100), [0, 30])
    assert.deepEqual(tickIndices(3, 2000), [0, 1, 2])
    assert.deepEqual(tickIndices(1, 300), [0])
    assert.deepEqual(tickIndices(0, 300), [])
  })
})
