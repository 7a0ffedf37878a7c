/**
 * Loaded with `--import` (NODE_OPTIONS) into a server under test: appends the URL of every
 * OpenTelemetry module the process loads to the file KNS_TEST_IMPORT_LOG names, so a test can
 * tell that tracing left off imports none of it.
 */
import { appendFileSync } from 'node:fs'
import { registerHooks } from 'node:module'

const log = process.env.KNS_TEST_IMPORT_LOG
if (log !== undefined) {
  registerHooks({
    resolve(specifier, context, next) {
      const resolved = next(specifier, context)
      if (resolved.url.includes('/@opentelemetry/')) appendFileSync(log, `${resolved.url}\n`)
      return resolved
    },
  })
}
