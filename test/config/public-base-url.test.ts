/**
 * Several processes on one database must sign approval messages for one public URL: the URL
 * in use is kept in the database, and a server that would sign for another one refuses to
 * start unless PUBLIC_BASE_URL says so explicitly.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { loadConfig } from '../../src/config.ts'
import { openService } from '../../src/service.ts'
import { freshDatabaseEnv, type TestEnv } from '../helpers.ts'

let fresh: TestEnv
before(async () => { fresh = await freshDatabaseEnv() })
after(async () => { await fresh.cleanup() })

const open = async (env: Record<string, string>, role: 'server' | 'tool' = 'server') =>
  openService(loadConfig({ ...fresh.env, ...env }), { watchChanges: false, role })

test('unset: the first server keeps its default URL and is warned that it is unset', async () => {
  const s = await open({ PORT: '8123' })
  try {
    assert.equal(s.config.publicBaseUrl, 'http://localhost:8123')
    assert.match(s.warnings.join('\n'), /PUBLIC_BASE_URL is not set: approval links and signed approval messages name http:\/\/localhost:8123/)
  } finally {
    await s.close()
  }
})

test('unset: the same default again starts; another default (a second process, another PORT) is refused', async () => {
  await (await open({ PORT: '8123' })).close()
  await assert.rejects(open({ PORT: '8124' }), (err: Error) => {
    assert.equal((err as { code?: string }).code, 'INVALID_CONFIG')
    assert.match(err.message, /PUBLIC_BASE_URL is not set, and this database is served as http:\/\/localhost:8123, not http:\/\/localhost:8124/)
    return true
  })
})

test('unset in a CLI command: the URL the servers use, so that what it signs verifies there', async () => {
  const tool = await open({ PORT: '9999' }, 'tool')
  try {
    assert.equal(tool.config.publicBaseUrl, 'http://localhost:8123')
  } finally {
    await tool.close()
  }
})

test('set: used and kept, with a warning when it changes what the database was served as', async () => {
  const s = await open({ PUBLIC_BASE_URL: 'https://kns.example.com' })
  try {
    assert.equal(s.config.publicBaseUrl, 'https://kns.example.com')
    assert.match(s.warnings.join('\n'), /PUBLIC_BASE_URL changed from http:\/\/localhost:8123 to https:\/\/kns\.example\.com/)
    // No address handed out yet: the issuer the old default gave follows the new URL (test/identity/issuer-pin.test.ts).
    assert.equal(s.config.zkLoginIssuer, 'https://kns.example.com/oidc')
    assert.match(s.warnings.join('\n'), /ZKLOGIN_ISSUER re-pinned from http:\/\/localhost:8123\/oidc to https:\/\/kns\.example\.com\/oidc/)
  } finally {
    await s.close()
  }
  const again = await open({ PUBLIC_BASE_URL: 'https://kns.example.com', PORT: '7000' })
  await again.close()
  assert.deepEqual(again.warnings.filter((w) => w.startsWith('PUBLIC_BASE_URL')), [])
  assert.equal(again.config.zkLoginIssuer, 'https://kns.example.com/oidc')
  assert.doesNotMatch(again.warnings.join('\n'), /ZKLOGIN_ISSUER/)
  const tool = await open({}, 'tool')
  await tool.close()
  assert.equal(tool.config.publicBaseUrl, 'https://kns.example.com')
})
