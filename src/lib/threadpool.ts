/**
 * Sizes libuv's thread pool before anything uses it (import this module first). ES256 call
 * verification runs there (`verifyEs256`), beside the event loop thread. Node's default of 4
 * threads oversubscribes small machines: on 2 cores, 4 verifying threads and the event loop
 * measured 0.50 of the crypto.verify rate and a p99 of 11-17 ms at half the peak rate;
 * cores - 1 threads (here 1) measured 0.64 and 5.6 ms. UV_THREADPOOL_SIZE, when set, wins.
 */
import { availableParallelism } from 'node:os'

export const THREADPOOL_SIZE = process.env.UV_THREADPOOL_SIZE ??= String(Math.max(1, availableParallelism() - 1))
