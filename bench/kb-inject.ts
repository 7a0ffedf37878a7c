// scratch (not committed): in-process CPU per request through fastify.inject
import { loadConfig } from '../src/config.ts'
import { buildApp } from '../src/http/app.ts'
import { openService } from '../src/service.ts'
import { approvalBody, seed, sqliteDatabase, postgresDatabase } from './seed.ts'

const db = process.argv[2] === 'pg' ? await postgresDatabase('postgres://postgres@127.0.0.1:5432/test') : sqliteDatabase()
const data = await seed(db.env, { ownedNumbers: 200, users: 0, detailApprovals: 0, signApprovals: 0 })
const service = await openService(loadConfig(db.env))
const app = await buildApp(service, { logger: false })
await app.ready()
const N = +(process.argv[3] || 20000), C = 16
let i = 0
async function run(kind: string) {
  const c0 = process.cpuUsage(), t0 = performance.now(); let n = 0
  await Promise.all(Array.from({ length: C }, async () => {
    while (n < N) {
      n++
      const k = i++
      const res = kind === 'health'
        ? await app.inject({ method: 'GET', url: '/healthz' })
        : await app.inject({ method: 'POST', url: '/numsys/approval-phone', headers: { 'content-type': 'application/json', 'x-api-key': data.apiKey },
          payload: JSON.stringify(approvalBody(data.ownedPhones[k % data.ownedPhones.length]!, `inj-${k}`)) })
      if (res.statusCode !== 200) throw new Error(res.body)
    }
  }))
  const c = process.cpuUsage(c0)
  console.log(kind.padEnd(8), 'CPU µs/req', ((c.user + c.system) / N).toFixed(1), 'wall µs/req', ((performance.now() - t0) * 1000 / N).toFixed(1))
}
for (let r = 0; r < 3; r++) { await run('health'); await run('approval') }
await app.close(); await service.close(); await db.cleanup()
