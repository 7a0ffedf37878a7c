/**
 * One way to seed every fast-check run of the suite: random, printed by fast-check on a
 * failure, and FUZZ_SEED (with FUZZ_PATH, the shrunk case's path fast-check prints) to replay it.
 */

/** A random fast-check seed, or FUZZ_SEED to replay one. */
export function chooseSeed(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.FUZZ_SEED
  if (given !== undefined && given !== '') {
    const seed = Number(given)
    if (!Number.isSafeInteger(seed)) throw new Error(`FUZZ_SEED must be an integer, got ${given}`)
    return seed | 0
  }
  return (Math.random() * 2 ** 32) | 0
}

/** fast-check's replay parameters: the seed, and FUZZ_PATH when given. */
export function replayParameters(env: NodeJS.ProcessEnv = process.env): { seed: number; path?: string } {
  const path = env.FUZZ_PATH
  return { seed: chooseSeed(env), ...(path === undefined || path === '' ? {} : { path }) }
}
