#!/usr/bin/env node
// The container's HEALTHCHECK (deploy/docker/Dockerfile): GET /healthz on this host's own
// server, exit 0 on 200 and 1 otherwise, in under 5 s. Node's fetch, because the slim base
// image has no curl or wget. It reads the server's HOST and PORT as `kns serve` does: a
// wildcard listen address is asked on loopback.
import './require-node.js'

const host = process.env.HOST === undefined || process.env.HOST === '' || process.env.HOST === '0.0.0.0' ? '127.0.0.1'
  : process.env.HOST === '::' ? '[::1]'
    : process.env.HOST.includes(':') ? `[${process.env.HOST}]` : process.env.HOST
const port = process.env.PORT || '8080'
const url = `http://${host}:${port}/healthz`

try {
  const res = await fetch(url, { signal: AbortSignal.timeout(4000) })
  if (res.status !== 200) {
    process.stderr.write(`healthcheck: ${url} answered ${res.status}\n`)
    process.exit(1)
  }
} catch (err) {
  process.stderr.write(`healthcheck: ${url}: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}\n`)
  process.exit(1)
}
