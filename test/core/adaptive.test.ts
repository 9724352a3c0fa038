import { describe, expect, it } from 'vitest'
import { AdaptiveEstimator, histogramQuantile, latencyBucket, TOLERANCE, type AdaptiveWindow } from '../../src/core/adaptive.js'
import { applyFactor } from '../../src/stores/types.js'

/** A backend of capacity c: 50 ms up to c in flight, a quarter slower per request above, 500s past 150 ms. */
function backendWindow(limit: number, c: number): AdaptiveWindow {
  const p95 = 50 * (1 + Math.max(0, limit - c) / 4)
  const failing = p95 > 150
  return { samples: 200, p95: failing ? 150 : p95, failures: failing ? Math.round((200 * (limit - c - 8)) / limit) : 0, refused: 10 }
}

function run(estimator: AdaptiveEstimator, start: number, c: number, windows: number, min = 5, max = 500): number[] {
  const limits: number[] = []
  let limit = start
  for (let i = 0; i < windows; i++) {
    limit = applyFactor(limit, estimator.step(backendWindow(limit, c), limit).factor, min, max)
    limits.push(limit)
  }
  return limits
}

describe('the adaptive estimator', () => {
  it('finds a capacity from a safe start, holds near it without failures, and follows it down and up', () => {
    const e = new AdaptiveEstimator()
    const first = run(e, 5, 40, 80)
    // A slow start then the last 40 windows (10 s) near 40, never past where requests fail (48).
    expect(first.slice(-40).every((l) => l >= 34 && l <= 46)).toBe(true)
    const down = run(e, first.at(-1)!, 15, 80)
    expect(down.slice(-40).every((l) => l >= 12 && l <= 20)).toBe(true)
    const up = run(e, down.at(-1)!, 60, 80)
    expect(up.slice(-40).every((l) => l >= 50 && l <= 66)).toBe(true)
    // Found within 3 s (12 windows) of the change.
    expect(up.slice(12).every((l) => l >= 45)).toBe(true)
  })

  it('cuts hard on failures (by a quarter to a half), and in proportion to latency', () => {
    const e = new AdaptiveEstimator()
    e.step({ samples: 100, p95: 50, failures: 0, refused: 0 }, 20)
    expect(e.step({ samples: 100, p95: 50, failures: 5, refused: 0 }, 20)).toMatchObject({ reason: 'failures', factor: 0.75 })
    // Requests admitted before the cut are still ending: the next windows drain, then it judges again.
    for (let i = 0; i < 3; i++) expect(e.step({ samples: 100, p95: 50, failures: 90, refused: 0 }, 15)).toMatchObject({ reason: 'drain', factor: 1 })
    expect(e.step({ samples: 100, p95: 50, failures: 90, refused: 0 }, 15)).toMatchObject({ reason: 'failures', factor: 0.5 })
    const slow = new AdaptiveEstimator()
    slow.step({ samples: 100, p95: 50, failures: 0, refused: 1 }, 20)
    const step = slow.step({ samples: 100, p95: 100, failures: 0, refused: 1 }, 20)
    expect(step.reason).toBe('latency')
    expect(step.factor).toBeCloseTo(Math.sqrt(TOLERANCE / 2), 2)
  })

  it('ends the slow start without a cut when latency rises gently and stays up, then probes a slot at a time', () => {
    const e = new AdaptiveEstimator()
    expect(e.step({ samples: 100, p95: 50, failures: 0, refused: 1 }, 20)).toMatchObject({ reason: 'growth', factor: 1.5 })
    // 1.2x the baseline: above the tolerance, not sharp. Once is noise; twice ends the slow start.
    expect(e.step({ samples: 100, p95: 60, failures: 0, refused: 1 }, 30)).toMatchObject({ reason: 'steady', factor: 1 })
    expect(e.step({ samples: 100, p95: 60, failures: 0, refused: 1 }, 30)).toMatchObject({ reason: 'steady', factor: 1 })
    // Latency back to normal: growth resumes, but by one slot, then two (not x1.5 past 30).
    expect(e.step({ samples: 100, p95: 50, failures: 0, refused: 1 }, 30).factor).toBeCloseTo(31 / 30, 5)
    expect(e.step({ samples: 100, p95: 50, failures: 0, refused: 1 }, 31).factor).toBeCloseTo(33 / 31, 5)
  })

  it('grows only while demand presses; idle or quiet windows hold the limit', () => {
    const e = new AdaptiveEstimator()
    expect(e.step({ samples: 2, p95: 50, failures: 0, refused: 5 }, 10).reason).toBe('idle')
    expect(e.step({ samples: 100, p95: 50, failures: 0, refused: 0 }, 10)).toMatchObject({ factor: 1, reason: 'steady' })
    expect(e.step({ samples: 100, p95: 50, failures: 0, refused: 1 }, 10).factor).toBeGreaterThan(1)
  })

  it('never leaves [min, max], whatever it is fed', () => {
    const e = new AdaptiveEstimator()
    let limit = 7
    for (let i = 0; i < 5_000; i++) {
      const w = { samples: Math.floor(Math.random() * 300), p95: Math.random() < 0.05 ? null : 20 + Math.random() * 200, failures: Math.random() < 0.1 ? 5 : 0, refused: Math.random() < 0.5 ? 1 : 0 }
      limit = applyFactor(limit, e.step(w, limit).factor, 3, 90)
      expect(limit).toBeGreaterThanOrEqual(3)
      expect(limit).toBeLessThanOrEqual(90)
    }
  })

  it('goes on from its saved state exactly as it would have (the fleet\'s judge changes hands each window)', () => {
    const kept = new AdaptiveEstimator()
    let handed = AdaptiveEstimator.restore(null)
    let limit = 5
    for (let i = 0; i < 240; i++) {
      const w = backendWindow(limit, i < 80 ? 40 : i < 160 ? 15 : 60)
      const a = kept.step(w, limit)
      const b = handed.step(w, limit)
      expect(b).toEqual(a)
      handed = AdaptiveEstimator.restore(handed.save())
      expect(handed.last).toEqual({ reason: a.reason, recent: a.recent })
      expect(handed.baseline).toBe(kept.baseline)
      limit = applyFactor(limit, a.factor, 5, 500)
    }
  })

  it('starts afresh from a state it cannot read', () => {
    for (const text of ['', 'nope', '{}', '[1,2]', JSON.stringify([-1, "x", null, NaN, null, 1, 1, 1, "bogus", -3])]) {
      const e = AdaptiveEstimator.restore(text)
      expect(e.baseline === null || e.baseline >= 0).toBe(true)
      expect(e.step({ samples: 100, p95: 50, failures: 0, refused: 1 }, 10)).toMatchObject({ reason: 'growth', factor: 1.5 })
    }
  })
})

describe('the latency histogram', () => {
  it('gives the 95th percentile of added-up windows within 1.3 % of the exact one', () => {
    for (let round = 0; round < 200; round++) {
      const samples = Array.from({ length: 1 + Math.floor(Math.random() * 400) }, () => 2 + Math.random() ** 3 * 500)
      const buckets = new Map<number, number>()
      for (const ms of samples) buckets.set(latencyBucket(ms), (buckets.get(latencyBucket(ms)) ?? 0) + 1)
      const exact = [...samples].sort((a, b) => a - b)[Math.floor(samples.length * 0.95)]!
      expect(Math.abs(histogramQuantile(buckets, 0.95)! / exact - 1)).toBeLessThan(0.013)
    }
    expect(histogramQuantile(new Map(), 0.95)).toBeNull()
    expect(latencyBucket(-5)).toBe(0)
    expect(latencyBucket(1e9)).toBe(latencyBucket(120_000))
  })
})
