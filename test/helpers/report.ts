/** The history report's CSV read back, and the check that it says what the JSON rows say. */
import { expect } from 'vitest'
import { reportCsv, type HistoryReport } from '../../src/core/report.js'

/** Parses the report's CSV back into objects keyed by its header. */
export function parseCsv(text: string): Record<string, string>[] {
  const [head, ...lines] = text.trimEnd().split('\r\n')
  const keys = head!.split(',')
  return lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [keys[i]!, v])))
}

/** Checks that the CSV holds exactly the JSON rows (every figure, same order). */
export function expectCsvAgrees(report: HistoryReport): void {
  const csv = parseCsv(reportCsv(report))
  expect(csv).toHaveLength(report.rows.length)
  report.rows.forEach((row, i) => {
    const c = csv[i]!
    const num = (v: string | undefined) => (v === '' || v === undefined ? null : Number(v))
    expect(c.minute).toBe(row.minute)
    for (const k of ['admitted', 'admittedFromLine', 'turnedAway', 'abandoned', 'released', 'inLine', 'waitP50', 'waitP90', 'waitMax', 'visitP50', 'visitP90'] as const) {
      expect(num(c[k]), `${row.minute} ${k}`).toBe(row[k])
    }
    for (const [reason, n] of Object.entries(row.turnedAwayBy)) expect(num(c[`turnedAway.${reason}`])).toBe(n)
    for (const [cause, n] of Object.entries(row.releasedBy)) expect(num(c[`released.${cause}`])).toBe(n)
    // And nothing in the CSV that the row does not have.
    for (const [k, v] of Object.entries(c)) if (k.startsWith('turnedAway.') && !(k.slice(11) in row.turnedAwayBy)) expect(v).toBe('0')
  })
}
