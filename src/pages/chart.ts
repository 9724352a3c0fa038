/**
 * A line chart as inline SVG (no script, no style attribute: the pages' CSPs allow neither), with
 * its axes, time labels, legend and a text summary for screen readers. The history report
 * (report.ts) and `airlock hug`'s report draw with it.
 */
import { escapeHtml } from './csp.js'

const W = 640
const H = 180
const PAD = { left: 44, right: 10, top: 10, bottom: 26 }

/** One line of a chart. */
export interface Series {
  label: string
  color: string
  values: (number | null)[]
}

/** What a chart shows: `series` over `times` (ms), on an axis from `from` to `to`. */
export interface ChartSpec {
  title: string
  times: readonly number[]
  from: number
  to: number
  series: readonly Series[]
  /** Appended to the figures of the summary (`' s'`). */
  unit: string
  /** Two points further apart than this break the line (ms). */
  gap: number
  /** A time's label on the axis. */
  tick: (t: number) => string
  /** Labelled times between the ends (default none). */
  ticks?: readonly number[]
}

/** One chart: lines over the range (a gap breaks a line), axes labelled, a legend and a summary. */
export function lineChart(c: ChartSpec): string {
  const { from, series } = c
  const to = Math.max(c.to, from + 1)
  let max = 0
  for (const s of series) for (const v of s.values) if (v !== null && v > max) max = v
  const top = max <= 0 ? 1 : max
  const x = (t: number): number => PAD.left + ((t - from) / (to - from)) * (W - PAD.left - PAD.right)
  const y = (v: number): number => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom)
  const paths = series.map((s) => {
    let d = ''
    let last = -Infinity
    // A point with no neighbour within the gap draws no line: it gets a dot.
    let lone: [number, number] | undefined
    const dots: string[] = []
    const dot = (): void => {
      if (lone) dots.push(`<circle cx="${lone[0].toFixed(1)}" cy="${lone[1].toFixed(1)}" r="2" fill="${s.color}"/>`)
      lone = undefined
    }
    s.values.forEach((v, i) => {
      if (v === null) {
        last = -Infinity
        return
      }
      const t = c.times[i]!
      const start = t - last > c.gap
      if (start) dot()
      d += `${start ? 'M' : 'L'}${x(t).toFixed(1)} ${y(v).toFixed(1)}`
      lone = start ? [x(t), y(v)] : undefined
      last = t
    })
    dot()
    return `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.6" stroke-linejoin="round" stroke-linecap="round"/>${dots.join('')}`
  })
  const summary = series
    .map((s) => `${s.label}: at most ${Math.round(Math.max(0, ...s.values.map((v) => v ?? 0)) * 10) / 10}${c.unit}`)
    .join('; ')
  const between = (c.ticks ?? [])
    .map(
      (t) =>
        `<line x1="${x(t).toFixed(1)}" y1="${H - PAD.bottom}" x2="${x(t).toFixed(1)}" y2="${H - PAD.bottom + 4}" stroke="#99a"/><text x="${x(t).toFixed(1)}" y="${H - 8}" text-anchor="middle" font-size="10" fill="#445">${escapeHtml(c.tick(t))}</text>`,
    )
    .join('')
  const axes =
    `<line x1="${PAD.left}" y1="${H - PAD.bottom}" x2="${W - PAD.right}" y2="${H - PAD.bottom}" stroke="#99a"/>` +
    `<line x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${H - PAD.bottom}" stroke="#99a"/>` +
    `<text x="${PAD.left - 4}" y="${PAD.top + 8}" text-anchor="end" font-size="10" fill="#445">${Math.round(top * 10) / 10}</text>` +
    `<text x="${PAD.left - 4}" y="${H - PAD.bottom}" text-anchor="end" font-size="10" fill="#445">0</text>` +
    `<text x="${PAD.left}" y="${H - 8}" font-size="10" fill="#445">${escapeHtml(c.tick(from))}</text>` +
    `<text x="${W - PAD.right}" y="${H - 8}" text-anchor="end" font-size="10" fill="#445">${escapeHtml(c.tick(to))}</text>` +
    between
  // The legend inside the chart (presentation attributes: the CSP allows no style attribute).
  const legend = series
    .map((s, i) => {
      const lx = W - PAD.right - 110 * (series.length - i)
      return `<line x1="${lx}" y1="${PAD.top + 4}" x2="${lx + 16}" y2="${PAD.top + 4}" stroke="${s.color}" stroke-width="3"/><text x="${lx + 20}" y="${PAD.top + 8}" font-size="10" fill="#1d2330">${escapeHtml(s.label)}</text>`
    })
    .join('')
  return (
    `<figure><svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${escapeHtml(`${c.title}. ${summary}`)}" data-chart="${escapeHtml(c.title)}">` +
    `<title>${escapeHtml(`${c.title}. ${summary}`)}</title>${axes}${paths.join('')}${legend}</svg>` +
    `<figcaption>${escapeHtml(c.title)} (${escapeHtml(summary)})</figcaption></figure>`
  )
}
