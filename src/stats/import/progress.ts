/**
 * A progress bar on stderr for long imports: only when stderr is a terminal (so that logs,
 * pipes and --json output stay clean), redrawn at most ten times a second.
 */
const REDRAW_MS = 100
const WIDTH = 30

export interface Progress {
  /** `bytes` read of `total`; `records` processed so far. */
  update(bytes: number, records: number): void
  done(): void
}

function human(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(n)
}

export function createProgress(label: string, totalBytes: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, done() {} }
  const started = Date.now()
  let last = 0
  let drawn = false
  const draw = (bytes: number, records: number) => {
    const fraction = totalBytes > 0 ? Math.min(1, bytes / totalBytes) : 0
    const filled = Math.round(fraction * WIDTH)
    const seconds = (Date.now() - started) / 1000
    const rate = seconds > 0 ? records / seconds : 0
    const eta = fraction > 0 ? Math.round(seconds / fraction - seconds) : 0
    stream.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}% ` +
      `${human(records)} records ${human(Math.round(rate))}/s ETA ${eta}s   `)
    drawn = true
  }
  return {
    update(bytes, records) {
      const now = Date.now()
      if (now - last < REDRAW_MS) return
      last = now
      draw(bytes, records)
    },
    done() {
      if (drawn) stream.write('\r\x1b[K')
    },
  }
}
