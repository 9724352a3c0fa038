/**
 * The one quantile reader of src/core/histogram.ts, on both bucket schemes (the history's waits and
 * visits, the adaptive limit's latencies): empty histograms, a single bucket, the top bucket, and
 * the two rank rules.
 */
import { describe, expect, it } from 'vitest'
import {
  bucketBounds,
  BUCKETS,
  HISTORY_SCHEME,
  histogramQuantile,
  LATENCY_BUCKETS,
  LATENCY_SCHEME,
  latencyBucket,
  quantile,
} from '../../src/core/histogram.js'

describe('quantile from counts', () => {
  it('reads nothing from an empty histogram (no buckets, or only empty ones), in either scheme', () => {
    for (const scheme of [HISTORY_SCHEME, LATENCY_SCHEME]) {
      expect(quantile(new Map(), 0.5, null, scheme)).toBeNull()
      expect(quantile(new Map([[3, 0]]), 0.95, 1_000, scheme)).toBeNull()
    }
    expect(histogramQuantile(new Map(), 0.95)).toBeNull()
  })

  it('reads a single bucket at every q: its centre (latency), within its bounds by rank (history)', () => {
    const i = latencyBucket(100)
    for (const q of [0, 0.5, 0.95, 1]) {
      expect(histogramQuantile(new Map([[i, 7]]), q)).toBe(Math.expm1(i / 40))
      expect(
        quantile(
          new Map([
            [0, 0],
            [i, 7],
          ]),
          q,
          null,
          LATENCY_SCHEME,
        ),
      ).toBe(Math.expm1(i / 40))
    }
    const [from, to] = bucketBounds(5)
    // One value: the middle of the bucket; four: the nth at (n - 0.5) / 4 of the way.
    expect(quantile(new Map([[5, 1]]), 0.5)).toBe(Math.round((from + to) / 2))
    expect(quantile(new Map([[5, 4]]), 0.25)).toBe(Math.round(from + (to - from) / 8))
    expect(quantile(new Map([[5, 4]]), 1)).toBe(Math.round(from + ((to - from) * 7) / 8))
    // Never above the maximum when it is known.
    expect(quantile(new Map([[5, 4]]), 1, from + 1)).toBe(Math.round(from + 1))
  })

  it('reads the top bucket up to the maximum (history), at its centre (latency)', () => {
    const [from, to] = bucketBounds(BUCKETS - 1)
    expect(to).toBe(Infinity)
    // Without a maximum the open top bucket reads as its lower bound.
    expect(quantile(new Map([[BUCKETS - 1, 2]]), 1)).toBe(Math.round(from))
    expect(quantile(new Map([[BUCKETS - 1, 1]]), 0.5, from + 1_000)).toBe(Math.round(from + 500))
    expect(
      quantile(
        new Map([
          [0, 9],
          [BUCKETS - 1, 1],
        ]),
        1,
        from + 1_000,
      ),
    ).toBe(Math.round(from + 500))
    expect(latencyBucket(1e12)).toBe(LATENCY_BUCKETS - 1)
    expect(
      histogramQuantile(
        new Map([
          [2, 9],
          [LATENCY_BUCKETS - 1, 1],
        ]),
        1,
      ),
    ).toBe(Math.expm1((LATENCY_BUCKETS - 1) / 40))
  })

  it('counts the rank as each scheme says: the nearest rank (history), past q of the values (latency)', () => {
    // Two values in two buckets: the median is the first by the nearest rank (ceil(0.5 x 2) = 1),
    // the second as sorted[floor(0.5 x 2)].
    expect(
      quantile(
        new Map([
          [9, 1],
          [2, 1],
        ]),
        0.5,
      ),
    ).toBe(Math.round(bucketBounds(2).reduce((a, b) => a + b) / 2))
    expect(
      histogramQuantile(
        new Map([
          [9, 1],
          [2, 1],
        ]),
        0.5,
      ),
    ).toBe(Math.expm1(9 / 40))
    // A rank before the first value (q below 0) reads the lowest bucket; q = 1 the highest.
    expect(
      histogramQuantile(
        new Map([
          [9, 1],
          [2, 1],
        ]),
        -1,
      ),
    ).toBe(Math.expm1(2 / 40))
    expect(
      quantile(
        new Map([
          [9, 1],
          [2, 3],
        ]),
        1,
      ),
    ).toBe(Math.round(bucketBounds(9).reduce((a, b) => a + b) / 2))
  })
})
