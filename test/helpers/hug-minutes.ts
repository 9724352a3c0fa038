/**
 * A hug as the history keeps it, a record a minute, for the report page's tests: the line grows to
 * `peak` at the middle and drains, some are turned away (`full`) in the first third, the waits
 * grow, a few leave; `gap` minutes may be missing (an instance down).
 */
import { bucketOf } from '../../src/core/histogram.js'
import type { MinuteRecord } from '../../src/stores/history.js'

/** 9:00 UTC on 1 December 2026, in minutes. */
export const HUG_FIRST = Math.floor(Date.UTC(2026, 11, 1, 9, 0, 0) / 60_000)

export function hugMinutes(minutes: number, peak: number, gap?: readonly [number, number]): MinuteRecord[] {
  const out: MinuteRecord[] = []
  for (let m = 0; m < minutes; m++) {
    if (gap !== undefined && m >= gap[0] && m < gap[1]) continue
    const wait = 1_000 + m * 2_000
    out.push({
      minute: HUG_FIRST + m,
      fields: {
        a: 100 + (m % 7),
        al: 80,
        't.full': m < minutes / 4 ? 20 : 0,
        ab: 3,
        'r.visitor': 90,
        q: Math.max(0, peak - Math.abs(minutes / 2 - m) * 10),
        [`w${bucketOf(wait)}`]: 60,
        [`w${bucketOf(wait * 2)}`]: 20,
        wm: wait * 2,
        [`v${bucketOf(45_000)}`]: 90,
        vm: 50_000,
      },
    })
  }
  return out
}
