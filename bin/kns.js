#!/usr/bin/env node
// The CLI is TypeScript run through Node's type stripping: the guard refuses an older node in
// one line before anything TypeScript is loaded (static imports run first, in order).
import './require-node.js'

const { main } = await import('../src/cli/main.ts')
const code = await main(process.argv.slice(2))
if (code >= 0) process.exitCode = code
