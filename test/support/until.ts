import { setTimeout as sleep } from 'node:timers/promises'

/** Waits until `condition` holds (asked every 25 ms); resolves to the ms it took, throws after `timeoutMs`. */
export async function until(condition: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<number> {
  const started = Date.now()
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time')
    await sleep(25)
  }
  return Date.now() - started
}
