import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { FastifyInstance } from 'fastify'
import { loadConfig, type Config } from '../src/config.ts'
import { buildApp } from '../src/http/app.ts'
import { createApiKey, type Scope, type SigningBinding } from '../src/keys/api-keys.ts'
import type { Ledger } from '../src/ledger/ledger.ts'
import { openService, type Service } from '../src/service.ts'

/** The suite runs on SQLite, or on PostgreSQL when DATABASE_URL is set (as .ci/run does). */
export const ENGINE = process.env.DATABASE_URL ? 'postgres' : 'sqlite'

export interface TestEnv {
  config: Config
  /** Creates a fresh isolated database (SQLite file or PostgreSQL schema) for one test file. */
  env: Record<string, string>
  cleanup(): Promise<void>
}

/**
 * A fresh, isolated database: a new SQLite file, or a new PostgreSQL schema selected through
 * the connection's search_path, so test files never see each other's rows.
 */
export async function freshDatabaseEnv(extra: Record<string, string> = {}): Promise<TestEnv> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kns-test-'))
  const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'silent', PUBLIC_RATE_LIMIT: '0', ...extra }
  let dropSchema = async () => {}
  const base = process.env.DATABASE_URL
  if (base) {
    const schema = `t_${randomBytes(6).toString('hex')}`
    const admin = new pg.Client({ connectionString: base })
    await admin.connect()
    await admin.query(`CREATE SCHEMA ${schema}`)
    await admin.end()
    const url = new URL(base)
    url.searchParams.set('options', `-c search_path=${schema}`)
    env.DATABASE_URL = url.toString()
    dropSchema = async () => {
      const c = new pg.Client({ connectionString: base })
      await c.connect()
      await c.query(`DROP SCHEMA ${schema} CASCADE`)
      await c.end()
    }
  }
  return {
    config: loadConfig(env),
    env,
    async cleanup() {
      await dropSchema()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

export interface Harness {
  service: Service
  app: FastifyInstance
  env: Record<string, string>
  /** A fresh API key (all scopes unless given); `signing` binds its signing scope to credentials. */
  key(options?: { scopes?: Scope[]; vendor?: string; rate?: number; signing?: SigningBinding }): Promise<string>
  close(): Promise<void>
}

/**
 * A service and its app on a fresh database; `ledger` replaces the configured one (e.g. a
 * SuiLedger on the GraphQL stub); `events` starts what a server runs in the background.
 */
export async function startHarness(extraEnv: Record<string, string> = {}, options: { ledger?: Ledger; events?: boolean; x5uTlsCa?: string } = {}): Promise<Harness> {
  const fresh = await freshDatabaseEnv(extraEnv)
  const service = await openService(fresh.config, {
    ...(options.ledger === undefined ? {} : { ledger: options.ledger }),
    ...(options.x5uTlsCa === undefined ? {} : { x5uTlsCa: options.x5uTlsCa }),
  })
  // The background work of a server (ledger watcher, expiry sweeper, webhook deliveries).
  if (options.events === true) service.events.start()
  const app = await buildApp(service, { logger: false })
  await app.ready()
  return {
    service,
    app,
    env: fresh.env,
    async key(options = {}) {
      const created = await createApiKey(service.db, {
        vendor: options.vendor ?? 'Acme Bank',
        scopes: options.scopes ?? ['approvals', 'caller', 'signing', 'stats', 'webhooks', 'oidc', 'sim-changes'],
        rate: options.rate ?? 100_000,
        ...(options.signing === undefined ? {} : { signing: options.signing }),
      })
      return created.key
    },
    async close() {
      await app.close()
      await service.close()
      await fresh.cleanup()
    },
  }
}
