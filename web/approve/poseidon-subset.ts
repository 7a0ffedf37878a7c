/**
 * Stands in for `poseidon-lite` in the pages' build (web/vite.config.ts): @mysten/sui's zkLogin
 * code imports the Poseidon hash for every arity from 1 to 16, whose round constants weigh
 * ~640 KB (~450 KB gzip, random numbers do not compress), but a zkLogin nonce and address seed
 * use four: 1 (the salt), 2 (the `sub` claim name), 4 (the nonce, the claim value) and 5 (`aud`).
 * The others throw, so a future use fails loudly in the browser tests instead of hashing wrong.
 */
import { poseidon1 } from 'poseidon-lite/poseidon1'
import { poseidon2 } from 'poseidon-lite/poseidon2'
import { poseidon4 } from 'poseidon-lite/poseidon4'
import { poseidon5 } from 'poseidon-lite/poseidon5'

type Hash = (inputs: Array<bigint | number | string>, nOuts?: number) => bigint

function unused(arity: number): Hash {
  return () => {
    throw new Error(`Poseidon with ${arity} inputs is not in the page's build (web/approve/poseidon-subset.ts)`)
  }
}

export { poseidon1, poseidon2, poseidon4, poseidon5 }
export const poseidon3 = unused(3)
export const poseidon6 = unused(6)
export const poseidon7 = unused(7)
export const poseidon8 = unused(8)
export const poseidon9 = unused(9)
export const poseidon10 = unused(10)
export const poseidon11 = unused(11)
export const poseidon12 = unused(12)
export const poseidon13 = unused(13)
export const poseidon14 = unused(14)
export const poseidon15 = unused(15)
export const poseidon16 = unused(16)
