import type { Config } from '../config.ts'

/**
 * Where the server's log goes, by LOG_FORMAT: `json` lines on stdout for a log collector (pino's
 * own output), or pino-pretty's readable lines for a person at a terminal. `auto` (the default)
 * is pretty when stdout is a terminal (`npm start` in development) and JSON otherwise (a
 * container, systemd, a pipe): nothing changes for a deployment.
 */
export async function logOutput(format: Config['logFormat'], stdoutIsTerminal = process.stdout.isTTY === true): Promise<{ stream: NodeJS.WritableStream } | undefined> {
  const readable = format === 'pretty' || (format === 'auto' && stdoutIsTerminal)
  if (!readable) return undefined
  // Loaded only for a terminal: a deployment writing JSON never pays for it at start.
  const { default: pretty } = await import('pino-pretty')
  return {
    stream: pretty({
      colorize: stdoutIsTerminal, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname',
      // A request's line stays one line: its id, method and URL, its status and time.
      singleLine: true, sync: true,
    }),
  }
}
