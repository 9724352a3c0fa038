/**
 * The histogram the history keeps of waits and visits: counts per bucket, buckets of one fixed
 * scheme for every instance, so the fleet's histogram of a minute (or of a day) is the sum of the
 * instances' counts, and percentiles are read from the merged counts (percentiles themselves do
 * not add up). Buckets are a quarter of a power of two wide (about 19 %): bucket 0 holds waits
 * under 250 ms, bucket k (1..56) from 250 ms x 2^((k-1)/4) up to 250 ms x 2^(k/4), so 56 buckets
 * reach 68 minutes; bucket 57 holds anything longer. A percentile read within a bucket is off by
 * at most half a bucket (under 10 %); the maximum is kept exactly beside the counts.
 */

/** Buckets of the scheme (0 .. BUCKETS - 1). */
export const BUCKETS = 58
const FIRST_MS = 250

/** The bucket of a duration in ms. */
export function bucketOf(ms: number): number {
  if (!(ms >= FIRST_MS)) return 0
  return Math.min(BUCKETS - 1, 1 + Math.floor(4 * Math.log2(ms / FIRST_MS) + 1e-9))
}

/** A bucket's bounds in ms: [from, to) (the last bucket's `to` is Infinity). */
export function bucketBounds(bucket: number): [from: number, to: number] {
  if (bucket <= 0) return [0, FIRST_MS]
  const from = FIRST_MS * 2 ** ((bucket - 1) / 4)
  return [from, bucket >= BUCKETS - 1 ? Infinity : FIRST_MS * 2 ** (bucket / 4)]
}

/**
 * The `q` quantile (0 < q <= 1) of a histogram given as bucket -> count, in ms (rounded), or
 * `null` when it counts nothing: the bucket where the rank falls, then linearly within it (at
 * the middle of the share of the bucket the rank stands for), never above `max` when known.
 */
export function quantile(counts: ReadonlyMap<number, number>, q: number, max?: number | null): number | null {
  let total = 0
  for (const n of counts.values()) total += n
  if (total <= 0) return null
  const rank = Math.max(1, Math.ceil(q * total))
  let below = 0
  for (const bucket of [...counts.keys()].sort((a, b) => a - b)) {
    const n = counts.get(bucket)!
    if (n <= 0) continue
    if (below + n >= rank) {
      const [from, to] = bucketBounds(bucket)
      const top = to === Infinity ? (max ?? from) : to
      const value = from + ((top - from) * (rank - below - 0.5)) / n
      return Math.round(max !== undefined && max !== null ? Math.min(value, max) : value)
    }
    below += n
  }
  return null
}
