#!/usr/bin/env node
// The CLI is TypeScript run through Node's type stripping, which needs Node 24.
const major = Number(process.versions.node.split('.')[0])
if (major < 24) {
  process.stderr.write(`kns needs Node.js 24 or newer (this is ${process.version}); run it through npx or npm scripts, which use the project's pinned node.\n`)
  process.exit(1)
}
const { main } = await import('../src/cli/main.ts')
const code = await main(process.argv.slice(2))
if (code >= 0) process.exitCode = code
