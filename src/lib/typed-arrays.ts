/**
 * Growable typed arrays (per-client state indexed by number in the statistics import): the
 * array itself while it is long enough, otherwise a copy at least twice as long whose new
 * elements are `fill`.
 */
export function withLength(array: Int32Array<ArrayBuffer>, length: number, fill?: number): Int32Array<ArrayBuffer>
export function withLength(array: Float64Array<ArrayBuffer>, length: number, fill?: number): Float64Array<ArrayBuffer>
export function withLength(array: Int32Array<ArrayBuffer> | Float64Array<ArrayBuffer>, length: number, fill = 0): Int32Array<ArrayBuffer> | Float64Array<ArrayBuffer> {
  if (length <= array.length) return array
  const grown = array instanceof Int32Array ? new Int32Array(Math.max(length, array.length * 2)) : new Float64Array(Math.max(length, array.length * 2))
  grown.set(array)
  if (fill !== 0) grown.fill(fill, array.length)
  return grown
}
