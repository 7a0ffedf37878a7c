/**
 * The Docker build context of deploy/docker/Dockerfile as `docker build .` would send it: the
 * repository less what .dockerignore excludes. Our machines have no Docker engine, so the
 * tests lay the image out from this context with deploy/install.sh instead (docs/deploy.md),
 * and read the Dockerfile's instructions to check them.
 */
import { cpSync, readFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { ROOT } from './process.ts'

/** The patterns of .dockerignore, in order (comments and blank lines dropped). */
export function dockerignorePatterns(root = ROOT): string[] {
  return readFileSync(join(root, '.dockerignore'), 'utf8').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))
}

/** Docker's matching (Go's filepath.Match plus `**`), for the patterns used here: `*`, `?`, `**`. */
function patternRegExp(pattern: string): RegExp {
  const body = pattern.replace(/^\/+|\/+$/g, '').split('/').map((part) => (part === '**' ? '\u0000' : part
    .replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[^/]*').replaceAll('?', '[^/]'))).join('/')
  return new RegExp(`^${body.replaceAll('\u0000/', '(?:.*/)?').replaceAll('/\u0000', '(?:/.*)?').replaceAll('\u0000', '.*')}$`)
}

/** Whether `path` (relative to the context, `/`-separated) is left out: the last matching pattern wins, `!` re-includes. */
export function isIgnored(path: string, patterns: string[]): boolean {
  const prefixes = path.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'))
  let ignored = false
  for (const raw of patterns) {
    const negated = raw.startsWith('!')
    const regExp = patternRegExp(negated ? raw.slice(1) : raw)
    // A directory left out takes what is under it along.
    if (prefixes.some((prefix) => regExp.test(prefix))) ignored = !negated
  }
  return ignored
}

/** Copies the build context of the repository into `dest`. */
export function copyBuildContext(dest: string, root = ROOT): void {
  const patterns = dockerignorePatterns(root)
  cpSync(root, dest, {
    recursive: true,
    filter: (source) => {
      const path = relative(root, source).split(sep).join('/')
      return path === '' || !isIgnored(path, patterns)
    },
  })
}

export interface Instruction { keyword: string; args: string }

/** The Dockerfile's instructions: continuation lines joined, comments and the syntax directive dropped. */
export function dockerfileInstructions(file: string): Instruction[] {
  const logical: string[] = []
  let pending = ''
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (pending === '' && /^\s*(#|$)/.test(line)) continue
    if (/^\s*#/.test(line)) continue // a comment inside a continued instruction
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `
      continue
    }
    logical.push(pending + line)
    pending = ''
  }
  return logical.map((line) => {
    const [, keyword, args] = /^\s*(\w+)\s+(.*)$/.exec(line)!
    return { keyword: keyword!.toUpperCase(), args: args!.trim().replace(/\s+/g, ' ') }
  })
}
