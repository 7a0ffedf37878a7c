// First: sizes the thread pool before anything can start it.
import '../lib/threadpool.ts'
import { readFileSync } from 'node:fs'
import { loadConfig, loadDotEnv } from '../config.ts'
import { migrate, schemaVersion } from '../db/migrations.ts'
import { MIGRATIONS } from '../migrations.ts'
import { openCheckedDatabase } from '../db/open.ts'
import { openService, type Service } from '../service.ts'
import { startTracing } from '../lib/tracing.ts'
import { parse } from './args.ts'
import { apiKeyCommand, API_KEY_OPTIONS, API_KEY_USAGE } from './api-key-commands.ts'
import { keystoreCommand, passportCommand, registryCommand } from './caller-commands.ts'
import { ensureServerFlags } from './node-flags.ts'
import { ledgerCommand, tokenCommand } from './ledger-commands.ts'
import { databaseExists, describeDatabase, requireExistingDatabase } from './database-location.ts'
import { createOutput, reportError, UsageError, type Output } from './output.ts'
import { seedCommand, statsCommand, statsHelpDetails, STATS_OPTIONS, STATS_USAGE } from './stats-commands.ts'
import { walletCommand } from './wallet-commands.ts'
import { webhookCommand, WEBHOOK_OPTIONS, WEBHOOK_USAGE } from './webhook-commands.ts'
import { certInfoCommand, shakenCommand, SHAKEN_OPTIONS, SHAKEN_USAGE } from './shaken-commands.ts'
import { oidcCommand, OIDC_OPTIONS, OIDC_USAGE } from './oidc-commands.ts'
import { checkPortsFree, checkWorkers, isWorker, runPrimary, workerCount } from './workers.ts'
import { phoneLoginCommand, PHONE_LOGIN_OPTIONS, PHONE_LOGIN_USAGE } from './phone-login-commands.ts'
import { simChangesCommand, SIM_CHANGES_OPTIONS, SIM_CHANGES_USAGE } from './sim-changes-commands.ts'

const USAGE = `kns: phone-number identity on the Sui ledger

Usage: kns <command> [options] [--json]
       kns --version | -v                 the version of this kns (package.json)

  serve [--workers <n>|auto]              start the HTTP API (same as npm start); --workers (or WORKERS): that many
                                          processes on one port, PostgreSQL only
  migrate                                 apply pending database migrations
  doctor [--production]                   check the database and the ledger (LEDGER=sui: packages, ID map, page limit);
                                          --production: also fail on what must not reach production (each with its fix)
  prune [--older-than-days <n>]           delete finished webhook deliveries, events, read ledger feed rows and ended CAMARA subscriptions older
                                          than RETENTION_DAYS (90), or n days, and SIM and device change records older
                                          than SIM_SWAP_MONITORED_DAYS; the server does it hourly
${API_KEY_USAGE}
  token mint --phone <+E164> --owner <0x address>         (LEDGER=local)
  token transfer --object-id <id> --to <0x address>       (LEDGER=local)
  token link --phone <+E164> --object-id <id>
  ledger approve --object-id <id> --ref <approvalNumber> (--secret-key <suiprivkey1...> | --secret-key-file <f>)
                                                          (LEDGER=local)
  wallet new [--scheme ed25519|secp256k1|secp256r1]      a developer keypair (address, suiprivkey)
  wallet sign-approval --ref <approvalNumber> --secret-key <k>   signature for verify_signature
  wallet sign-ledger-approve --object-id <id> --ref <n> --secret-key <k>
                                                          signature for POST /ledger/v1/approve
  keystore create --name <n> --creator <c> [--image-url <u>] --public-key <file.pem> [--key-id <id>]
  keystore add-key <keystoreId> --public-key <file.pem> [--key-id <id>]
  keystore revoke-key <keystoreId> <keyId>
  keystore keygen --out <prefix>                          writes <prefix>.key.pem and <prefix>.pub.pem (ES256)
  registry link (--object-id <token> | --phone <+E164>) --keystore <keystoreId>
  registry unlink (--object-id <token> | --phone <+E164>) --keystore <keystoreId>
  passport sign --orig <tn> --dest <tn> --key <private.pem> [--kid <id>] [--attest A] [--origid <id>] [--iat <s>]
  passport sign --orig <tn> --dest <tn> --div <tn> --key <private.pem> [--kid <id>] [--iat <s>]
                                                          a div PASSporT: the call to --div diverted to --dest
  passport verify --orig <tn> --dest <tn> (--jwt <jwt> | --identity <header> [--identity <header>...])
                                                          the verification pipeline step by step, as
                                                          call-signature-verification runs it (a diverted
                                                          call: each of its Identity headers)
${SHAKEN_USAGE}
${OIDC_USAGE}
${PHONE_LOGIN_USAGE}
${WEBHOOK_USAGE}
${STATS_USAGE}
${SIM_CHANGES_USAGE}

Configuration comes from the environment and ./.env (see README). --json prints one JSON
object on stdout; errors go to stderr with a non-zero exit code.`

/**
 * `kns <command> --help`: the usage lines of that command (with their continuation lines),
 * taken from the one usage text so the two never disagree.
 */
export function commandHelp(command: string): string {
  const lines = USAGE.split('\n')
  const picked: string[] = []
  let inCommand = false
  for (const line of lines) {
    if (/^ {2}\S/.test(line)) inCommand = line.slice(2).split(' ')[0] === command
    else if (!/^ {3,}\S/.test(line)) inCommand = false
    if (inCommand) picked.push(line)
  }
  if (picked.length === 0) throw new UsageError(`unknown command '${command}'`)
  const details = COMMAND_DETAILS[command]?.()
  return `Usage: kns ${command} ... [--json]\n\n${picked.join('\n')}\n\n${details === undefined ? '' : `${details}\n\n`}` +
    'Configuration comes from the environment and ./.env (see README): the CLI uses the same database and settings as the server.'
}

/** What a command's --help says besides its usage lines, generated from the definitions it describes. */
const COMMAND_DETAILS: Record<string, () => string> = { stats: statsHelpDetails }

/** The version of the package this CLI is (package.json, beside src/ in a checkout and in a deployment alike). */
function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
}

const OPTIONS = {
  ...STATS_OPTIONS,
  ...WEBHOOK_OPTIONS,
  ...SHAKEN_OPTIONS,
  ...API_KEY_OPTIONS,
  ...OIDC_OPTIONS,
  ...PHONE_LOGIN_OPTIONS,
  ...SIM_CHANGES_OPTIONS,
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  workers: { type: 'string' },
  production: { type: 'boolean' },
  'older-than-days': { type: 'string' },
  phone: { type: 'string' }, owner: { type: 'string' }, 'object-id': { type: 'string' }, to: { type: 'string' },
  name: { type: 'string' }, creator: { type: 'string' }, 'image-url': { type: 'string' }, 'public-key': { type: 'string' },
  'key-id': { type: 'string' }, keystore: { type: 'string' }, out: { type: 'string' }, orig: { type: 'string' },
  dest: { type: 'string' }, key: { type: 'string' }, kid: { type: 'string' }, attest: { type: 'string' },
  origid: { type: 'string' }, iat: { type: 'string' }, jwt: { type: 'string' }, identity: { type: 'string', multiple: true }, div: { type: 'string' },
  ref: { type: 'string' }, scheme: { type: 'string' }, 'secret-key': { type: 'string' }, 'secret-key-file': { type: 'string' },
} as const


export async function main(argv: string[]): Promise<number> {
  let json = argv.includes('--json')
  try {
    const args = parse(argv, OPTIONS)
    json = args.values.json === true
    const out = createOutput(json)
    const [command, sub] = args.positionals
    const helpFor = command === 'help' ? sub : args.values.help === true ? command : undefined
    if (args.values.version === true) {
      const version = packageVersion()
      out.result({ version }, `kns ${version}`)
      return 0
    }
    if (command === undefined || (command === 'help' && sub === undefined) || (args.values.help === true && command === undefined)) {
      process.stdout.write(`${USAGE}\n`)
      return 0
    }
    if (helpFor !== undefined) {
      process.stdout.write(`${commandHelp(helpFor)}\n`)
      return 0
    }
    // Commands that need no database.
    if (command === 'wallet' && sub !== 'sign-approval') {
      await walletCommand(null, sub, args, out)
      return 0
    }
    if (command === 'keystore' && sub === 'keygen') {
      await keystoreCommand(null, sub, args, out)
      return 0
    }
    if (command === 'passport' && sub === 'sign') return await passportCommand(null, sub, args, out)
    if (command === 'shaken' && sub === 'cert-info') {
      certInfoCommand(args, out)
      return 0
    }
    if (command === 'seed' && args.values.out !== undefined) {
      await seedCommand(null, args, out)
      return 0
    }
    if (command === 'serve') ensureServerFlags()
    loadDotEnv()
    const config = loadConfig()
    if (!['serve', 'migrate', 'doctor', 'api-key', 'token', 'ledger', 'wallet', 'keystore', 'registry', 'passport', 'stats', 'seed', 'webhook', 'shaken', 'oidc', 'phone-login', 'prune', 'sim-changes'].includes(command)) {
      throw new UsageError(`unknown command '${command}'`)
    }
    // Every command below uses the database: say which, and never create one by accident:
    // only the server, `migrate` and `seed` (which exist to fill one) create it, and say so.
    const creates = command === 'migrate' || command === 'serve' || command === 'seed'
    // doctor reports a missing database as a finding, with what creates it.
    if (!creates && command !== 'doctor') requireExistingDatabase(config)
    if (!json && command !== 'serve') {
      process.stderr.write(`kns: ${databaseExists(config) ? 'using' : command === 'doctor' ? 'no database yet:' : 'creating a new database:'} ${describeDatabase(config)}\n`)
    }
    if (command === 'migrate') {
      const db = await openCheckedDatabase(config, 'tool')
      try {
        const applied = await migrate(db, MIGRATIONS)
        const version = await schemaVersion(db)
        out.result({ applied, version, engine: db.engine }, applied.length === 0 ? `database is up to date (version ${version})` : `applied migrations ${applied.join(', ')}; now at version ${version}`)
      } finally {
        await db.close()
      }
      return 0
    }
    if (command === 'oidc' && sub === 'repin-issuer') {
      const { repinIssuerCommand } = await import('./oidc-repin-command.ts')
      await repinIssuerCommand(config, args, out)
      return 0
    }
    if (command === 'doctor') {
      const { doctorCommand } = await import('./doctor-command.ts')
      return await doctorCommand(config, out, { production: args.values.production === true, portGiven: (process.env.PORT ?? '') !== '' })
    }
    if (command === 'serve' && !isWorker()) {
      const workers = workerCount(args.values.workers as string | undefined)
      checkWorkers(workers, config)
      if (workers > 1) {
        await checkPortsFree(config)
        // Once, before the workers: migrations, and what the first start pins (so N workers
        // do not race to pin it); then the workers, each a whole server.
        await (await openService(config, { role: 'server', pinSecret: true })).close()
        const { buildPagesIfStale } = await import('./serve.ts')
        buildPagesIfStale()
        await runPrimary(workers, (line) => process.stdout.write(`${JSON.stringify({ ...line, time: Date.now(), role: 'primary', pid: process.pid })}\n`), config.metricsListen)
        return -1
      }
    }
    // Traces (OTEL_EXPORTER_OTLP_ENDPOINT): started by each process that serves (every worker
    // of --workers runs this line; the primary, which serves nothing, returned above), before
    // the database opens, so its statements are traced.
    if (command === 'serve') await startTracing()
    const service = await openService(config, {
      watchChanges: command === 'serve', role: command === 'serve' ? 'server' : 'tool',
      // What fills a database may make its secret, as the first start would: the server, the
      // demo seed, and a history import before the first start (it keys client hashes with it).
      pinSecret: command === 'serve' || command === 'seed' || (command === 'stats' && sub === 'import'),
    })
    if (command === 'serve') {
      // Loaded only here: the HTTP stack is most of the CLI's start-up time.
      const { buildPagesIfStale, serve } = await import('./serve.ts')
      // A worker's primary built the pages already.
      if (!isWorker()) buildPagesIfStale()
      await serve(service)
      return -1 // keeps running; shutdown exits the process
    }
    try {
      if (command === 'api-key') await apiKeyCommand(service, sub, args, out)
      else if (command === 'token') await tokenCommand(service, sub, args, out)
      else if (command === 'wallet') await walletCommand(service, sub, args, out)
      else if (command === 'keystore') await keystoreCommand(service, sub, args, out)
      else if (command === 'registry') await registryCommand(service, sub, args, out)
      else if (command === 'passport') return await passportCommand(service, sub, args, out)
      else if (command === 'stats') await statsCommand(service, sub, args, out)
      else if (command === 'seed') await seedCommand(service, args, out)
      else if (command === 'webhook') return await webhookCommand(service, sub, args, out)
      else if (command === 'shaken') await shakenCommand(service, sub, args, out)
      else if (command === 'oidc') await oidcCommand(service, sub, args, out)
      else if (command === 'phone-login') await phoneLoginCommand(service, sub, args, out)
      else if (command === 'sim-changes') await simChangesCommand(service, sub, args, out)
      else if (command === 'prune') {
        const raw = args.values['older-than-days'] as string | undefined
        const days = raw === undefined ? service.config.retentionDays : Number(raw)
        if (!Number.isInteger(days) || days < 1) throw new UsageError('--older-than-days must be a whole number of days, at least 1 (RETENTION_DAYS=0 keeps everything: give it)')
        const counts = await service.events.prune(days * 86_400_000)
        // The monitored period is the law's, not a retention choice: --older-than-days does not move it.
        const simChanges = await service.swaps.prune()
        const subscriptions = await service.camaraSubscriptions.prune(days * 86_400_000)
        out.result({ olderThanDays: days, ...counts, subscriptions, simChanges },
          `deleted rows older than ${days} days: ${counts.deliveries} finished webhook deliveries, ${counts.events} events, ${counts.ledgerEvents} ledger feed rows, ${counts.rejections} watcher rejections, ` +
          `${subscriptions} ended CAMARA subscriptions; ` +
          `${simChanges} SIM and device change records older than ${service.swaps.monitoredDays} days (SIM_SWAP_MONITORED_DAYS)`)
      }
      else await ledgerCommand(service, sub, args, out)
    } finally {
      await service.close()
    }
    return 0
  } catch (err) {
    return reportError(err, json)
  }
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2))
  if (code >= 0) process.exitCode = code
}
