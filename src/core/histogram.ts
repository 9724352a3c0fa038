/**
 * Histograms that add up: counts per bucket, buckets of one fixed scheme for every instance, so the
 * fleet's histogram (of a minute, a day, an adaptive window) is the sum of the instances' counts, and
 * quantiles are read from the merged counts (quantiles themselves do not add up). One reader,
 * {@link quantile}, for the two schemes:
 *
 * - {@link HISTORY_SCHEME}, the history's waits and visits: buckets a quarter of a power of two wide
 *   (about 19 %): bucket 0 holds waits under 250 ms, bucket k (1..56) from 250 ms x 2^((k-1)/4) up
 *   to 250 ms x 2^(k/4), so 56 buckets reach 68 minutes; bucket 57 holds anything longer. A
 *   percentile read within a bucket is off by at most half a bucket (under 10 %); the maximum is
 *   kept exactly beside the counts.
 * - {@link LATENCY_SCHEME}, the adaptive limit's latencies: bucket `i` holds times around
 *   `expm1(i / 40)` ms (buckets about 2.5 % wide from a few ms up, so a fleet's percentiles are
 *   within about 1.3 % of the exact one), up to a minute.
 */

/**
 * How durations are bucketed, and how a quantile is read back from a bucket's counts.
 */
export interface BucketScheme {
  /** Buckets of the scheme (0 .. size - 1); the last holds everything beyond. */
  readonly size: number
  /** The bucket of a duration in ms. */
  bucketOf(ms: number): number
  /**
   * Which of `n` counted values the `q` quantile is (before it is kept within 1..n): `true`, the
   * one with more than q of them at or below it (floor(q n) + 1: `sorted[floor(q n)]`, as a
   * window's latency is judged); `false`, the nearest rank (ceil(q n): at least q).
   */
  readonly strict: boolean
  /**
   * The value (ms) the quantile reads in `bucket` when it is the `nth` (1..count) of the `count`
   * values the bucket holds; `max`: the largest value counted, when known.
   */
  valueIn(bucket: number, nth: number, count: number, max: number | null | undefined): number
}

/**
 * The `q` quantile (0 <= q <= 1) of a histogram given as bucket -> count, in ms, or `null` when it
 * counts nothing: the bucket where the quantile's rank falls (see {@link BucketScheme.strict}), then
 * the scheme's value there ({@link BucketScheme.valueIn}). By default the history's scheme, whose
 * value is rounded and never above `max` when known.
 */
export function quantile(
  counts: ReadonlyMap<number, number>,
  q: number,
  max?: number | null,
  scheme: BucketScheme = HISTORY_SCHEME,
): number | null {
  let total = 0
  for (const n of counts.values()) total += n
  if (!(total > 0)) return null
  const rank = Math.min(total, Math.max(1, scheme.strict ? Math.floor(q * total) + 1 : Math.ceil(q * total)))
  let below = 0
  for (const bucket of [...counts.keys()].sort((a, b) => a - b)) {
    const n = counts.get(bucket)!
    if (n <= 0) continue
    if (below + n >= rank) return scheme.valueIn(bucket, rank - below, n, max)
    below += n
  }
  return null
}

/** Buckets of the history's scheme (0 .. BUCKETS - 1). */
export const BUCKETS = 58
const FIRST_MS = 250

/** The bucket of a duration in ms (the history's scheme). */
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
 * The history's waits and visits: the nearest rank, read linearly within its bucket's bounds (at the
 * middle of the share of the bucket the rank stands for: the nth of count at (nth - 0.5) / count of
 * the way; the last bucket reaches `max`), rounded, never above `max` when known.
 */
export const HISTORY_SCHEME: BucketScheme = {
  size: BUCKETS,
  bucketOf,
  strict: false,
  valueIn(bucket, nth, count, max) {
    const [from, to] = bucketBounds(bucket)
    const top = to === Infinity ? (max ?? from) : to
    const value = from + ((top - from) * (nth - 0.5)) / count
    return Math.round(max !== undefined && max !== null ? Math.min(value, max) : value)
  },
}

/** Buckets of the adaptive limit's latency scheme (up to a minute). */
export const LATENCY_BUCKETS = 441

/** The bucket of a latency in ms (the adaptive limit's scheme). */
export function latencyBucket(ms: number): number {
  return Math.min(LATENCY_BUCKETS - 1, Math.round(Math.log1p(Math.max(0, ms)) * 40))
}

/** The adaptive limit's latencies: the strict rank, read as its bucket's centre `expm1(i / 40)` (not rounded). */
export const LATENCY_SCHEME: BucketScheme = {
  size: LATENCY_BUCKETS,
  bucketOf: latencyBucket,
  strict: true,
  valueIn: (bucket) => Math.expm1(bucket / 40),
}

/** The `q` quantile (ms) of a latency histogram given as bucket index -> count; `null` when empty. */
export function histogramQuantile(buckets: ReadonlyMap<number, number>, q: number): number | null {
  return quantile(buckets, q, null, LATENCY_SCHEME)
}
