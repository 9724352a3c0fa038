/** The history report's CSV read back, and the check that it says what the JSON rows say. */
import { expect } from 'vitest'
import { reportCsv, type HistoryReport } from '../../src/core/report.js'

/** The records of a CSV text (RFC 4180: quoted cells with doubled quotes, commas and line breaks inside). */
export function csvRecords(text: string): string[][] {
  const records: string[][] = []
  let record: string[] = []
  let cell = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"'
        i++
      } else if (c === '"') quoted = false
      else cell += c
    } else if (c === '"') quoted = true
    else if (c === ',') {
      record.push(cell)
      cell = ''
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(cell)
      records.push(record)
      record = []
      cell = ''
      i++
    } else cell += c
  }
  if (cell !== '' || record.length > 0) records.push([...record, cell])
  return records
}

/** Parses the report's CSV back into objects keyed by its header. */
export function parseCsv(text: string): Record<string, string>[] {
  const [keys, ...lines] = csvRecords(text)
  return lines.map((l) => Object.fromEntries(l.map((v, i) => [keys![i]!, v])))
}

/** Checks that the CSV holds exactly the JSON rows (every figure, same order). */
export function expectCsvAgrees(report: HistoryReport): void {
  const csv = parseCsv(reportCsv(report))
  expect(csv).toHaveLength(report.rows.length)
  report.rows.forEach((row, i) => {
    const c = csv[i]!
    const num = (v: string | undefined) => (v === '' || v === undefined ? null : Number(v))
    expect(c.minute).toBe(row.minute)
    for (const k of [
      'admitted',
      'admittedFromLine',
      'turnedAway',
      'abandoned',
      'released',
      'inLine',
      'waitP50',
      'waitP90',
      'waitMax',
      'visitP50',
      'visitP90',
    ] as const) {
      expect(num(c[k]), `${row.minute} ${k}`).toBe(row[k])
    }
    for (const [reason, n] of Object.entries(row.turnedAwayBy)) expect(num(c[`turnedAway.${reason}`])).toBe(n)
    for (const [cause, n] of Object.entries(row.releasedBy)) expect(num(c[`released.${cause}`])).toBe(n)
    // And nothing in the CSV that the row does not have.
    for (const [k, v] of Object.entries(c))
      if (k.startsWith('turnedAway.') && !(k.slice(11) in row.turnedAwayBy)) expect(v).toBe('0')
  })
}
