import assert from 'node:assert/strict'
import { generateKeyPairSync, sign } from 'node:crypto'
import { test } from 'node:test'
import { joseToDer, verifyEs256 } from '../../src/lib/es256.ts'

const scalar = (hex: string) => Buffer.from(hex.padStart(64, '0'), 'hex')
const jose = (r: string, s: string) => Buffer.concat([scalar(r), scalar(s)])

test('joseToDer: minimal INTEGERs, a zero byte before a set high bit, leading zeros dropped', () => {
  assert.equal(joseToDer(jose('01', '02')).toString('hex'), '3006020101020102')
  assert.equal(joseToDer(jose('80', '7f')).toString('hex'), '30070202008002017f')
  assert.equal(joseToDer(jose('00', '00')).toString('hex'), '3006020100020100')
  const high = 'ff'.repeat(32)
  assert.equal(joseToDer(jose(high, '0001ff')).toString('hex'), `3027022100${high}020201ff`)
})

test('joseToDer refuses anything but 64 bytes (DER input, truncated, padded)', () => {
  for (const length of [0, 63, 65, 70, 72]) assert.throws(() => joseToDer(new Uint8Array(length)), RangeError)
})

test('verifyEs256 accepts real r||s signatures, whatever the scalars look like, and nothing else', async () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const { publicKey: otherKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  let highBit = 0
  let leadingZero = 0
  // At least 600 signatures, and on until one has a scalar with a leading zero byte (~1 in 128
  // signatures: 600 alone miss it about once in 110 runs); the cap makes a miss ~e^-78.
  for (let i = 0; i < 600 || (leadingZero === 0 && i < 10_000); i++) {
    const data = Buffer.from(`header.payload-${i}`)
    const signature = sign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' })
    if ((signature[0]! | signature[32]!) & 0x80) highBit++
    if (signature[0] === 0 || signature[32] === 0) leadingZero++
    assert.equal(await verifyEs256(publicKey, data, signature), true, `signature ${i}`)
    if (i % 50 === 0) {
      assert.equal(await verifyEs256(otherKey, data, signature), false)
      assert.equal(await verifyEs256(publicKey, Buffer.from(`header.payload-${i}x`), signature), false)
      const tampered = Buffer.from(signature)
      tampered[40]! ^= 1
      assert.equal(await verifyEs256(publicKey, data, tampered), false)
    }
  }
  assert.ok(highBit > 100, 'covered scalars with the high bit set')
  assert.ok(leadingZero > 0, 'covered a scalar with a leading zero byte')
  assert.equal(await verifyEs256(publicKey, Buffer.from('x'), new Uint8Array(64)), false)
  assert.equal(await verifyEs256(publicKey, Buffer.from('x'), new Uint8Array(64).fill(0xff)), false)
})
