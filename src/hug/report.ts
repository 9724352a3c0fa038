/**
 * `airlock hug`'s report: one self-contained HTML page (inline style allowed by hash, the charts
 * as inline SVG, no script), the verdict, the totals and the run second by second; and the
 * summary the terminal shows at the end.
 */
import { lineChart, type Series } from '../pages/chart.js'
import { escapeHtml, sha256Source } from '../pages/csp.js'
import type { AnswerCounts, HugSecond, Spread } from './figures.js'
import type { HugSummary } from './crowd.js'

const STYLE =
  'body{margin:0;font:14px/1.45 system-ui,sans-serif;background:#f4f5f7;color:#1d2330}header{padding:1em 1.5em;background:#1d2330;color:#fff}' +
  'header h1{margin:0;font-size:1.3em}header p{margin:.2em 0 0}main{padding:0 1em 1em}' +
  'section{background:#fff;margin:1em 0;padding:1em;border-radius:8px;box-shadow:0 1px 3px #0002}h2{margin:0 0 .6em;font-size:1.1em}' +
  '.verdict{font-weight:600}.pass{color:#14532d}.fail{color:#991b1b}' +
  '.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(26em,1fr));gap:1em}figure{margin:0;break-inside:avoid}' +
  'figcaption{font-size:.85em;color:#445}svg{width:100%;height:auto;background:#fafbfc;border:1px solid #e3e5e8;border-radius:4px}' +
  'table{border-collapse:collapse;width:100%;font-size:.9em}td,th{text-align:left;padding:.25em .5em;border-bottom:1px solid #e3e5e8}' +
  'td.n{text-align:right;font-variant-numeric:tabular-nums}' +
  '@media print{body{background:#fff}header{background:none;color:#000;border-bottom:2px solid #000}section{box-shadow:none;border:1px solid #ccc}}'

/** The report's Content-Security-Policy: its inline style, nothing else. */
export const HUG_REPORT_CSP = `default-src 'none'; style-src ${sha256Source(STYLE)}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

const int = (n: number): string => n.toLocaleString('en-US')
const ms = (v: number | null): string =>
  v === null ? '–' : v >= 10_000 ? `${Math.round(v / 100) / 10} s` : `${Math.round(v)} ms`
const byList = (by: Record<string, number>): string =>
  Object.entries(by)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${int(v)}`)
    .join(', ')

/** The answers of the crowd or the flood in one line: `busy 1,200 (client-share 1,100, full 100), in line 30, ...`. */
export function answerLine(c: AnswerCounts): string {
  const parts = [
    `admitted ${int(c.admitted)}`,
    `busy ${int(c.busy)}${c.busy ? ` (${byList(c.busyBy)})` : ''}`,
    `in line ${int(c.queued)}`,
  ]
  if (c.challenged) parts.push(`challenged ${int(c.challenged)}`)
  parts.push(`origin errors ${int(c.originErrors)}${c.originErrors ? ` (${byList(c.originErrorsBy)})` : ''}`)
  if (c.noAnswer) parts.push(`no answer ${int(c.noAnswer)}`)
  return parts.join(', ')
}

const spreadLine = (s: Spread): string =>
  s.count === 0 ? 'none' : `p50 ${ms(s.p50)}, p90 ${ms(s.p90)}, p99 ${ms(s.p99)}, longest ${ms(s.max)}`

/** The summary the terminal prints at the end (plain text, one fact a line). */
export function summaryText(s: HugSummary): string {
  const v = s.visitors
  const lines = [
    `airlock hug ${s.url}: ${int(v.arrived)} visitors in ${s.seconds} s from ${int(s.sources)} address(es)`,
    `  visitors   admitted ${int(v.admitted)} (${int(v.admittedFromLine)} from the line), gave up ${int(v.gaveUp)}, most on the site at once ${int(v.onSiteMax)}${s.limit === null ? '' : ` (limit ${int(s.limit)})`}, most in line ${int(v.inLineMax)}`,
    `  answers    ${int(s.answers.requests)} requests: ${answerLine(s.answers)}`,
    `  crowd      ${answerLine(s.crowd)}`,
    ...(s.flood
      ? [
          `  flood      ${int(s.flood.connections)} connections, ${int(s.flood.requests)} requests: ${answerLine(s.flood)}`,
        ]
      : []),
    `  pages      ${spreadLine(s.pages)}`,
    `  waits      ${spreadLine(s.waits)} (arrival to admission)`,
    s.failures.length === 0 ? '  result     passed' : `  result     FAILED: ${s.failures.join('; ')}`,
  ]
  return lines.join('\n')
}

/** Each charted figure of the timeline (a HugSecond's) and its line: label, colour. */
const LINES = {
  inLine: ['in line', '#7c3aed'],
  onSite: ['on the site', '#16a34a'],
  admitted: ['admitted', '#16a34a'],
  busy: ['busy', '#b45309'],
  queued: ['in line', '#7c3aed'],
  waitP50: ['p50', '#2563eb'],
  waitP99: ['p99', '#ea580c'],
  pageP50: ['p50', '#0891b2'],
  pageP99: ['p99', '#9333ea'],
  originErrors: ['origin 5xx', '#dc2626'],
  noAnswer: ['no answer', '#475569'],
} as const satisfies Partial<Record<keyof HugSecond, readonly [label: string, color: string]>>
type Charted = keyof typeof LINES

/** The report's charts: title, the unit of the values, the figures drawn, what they are divided by (ms shown as s). */
const CHARTS: readonly (readonly [title: string, unit: string, figures: readonly Charted[], per?: number])[] = [
  ['Visitors in line and on the site', '', ['inLine', 'onSite']],
  ['Answers a second', '', ['admitted', 'busy', 'queued']],
  ['Wait from arrival to admission (s)', ' s', ['waitP50', 'waitP99'], 1000],
  ['Page latency (ms)', ' ms', ['pageP50', 'pageP99']],
  ['Origin errors and unanswered requests a second', '', ['originErrors', 'noAnswer']],
]

/** The report as one HTML page. */
export function renderHugReport(s: HugSummary): string {
  const times = s.timeline.map((x) => x.t * 1000)
  const to = Math.max(1000, times.at(-1) ?? 0)
  const step = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600].find((st) => to / 1000 / st <= 8) ?? 900
  const ticks: number[] = []
  for (let t = step * 1000; t < to - step * 300; t += step * 1000) ticks.push(t)
  /** A figure of every second; `per`: a divisor (ms shown as s). */
  const col = (k: Charted, per = 1): Series['values'] => s.timeline.map((x) => (x[k] === null ? null : x[k] / per))
  const tick = (t: number): string => `${Math.round(t / 1000)} s`
  const charts = CHARTS.map(([title, unit, figures, per]) => {
    const series = figures.map((k) => ({ label: LINES[k][0], color: LINES[k][1], values: col(k, per) }))
    return lineChart({ title, times, from: 0, to, series, unit, gap: 1500, tick, ticks })
  })
  const row = (label: string, value: string): string =>
    `<tr><th scope="row">${label}</th><td>${escapeHtml(value)}</td></tr>`
  const v = s.visitors
  const verdict =
    s.failures.length === 0
      ? `<p class="verdict pass">Passed: no origin errors${s.limit === null ? '' : `, never more than ${int(s.limit)} visitors on the site`}.</p>`
      : `<p class="verdict fail">Failed:</p><ul>${s.failures.map((f) => `<li>${escapeHtml(f)}</li>`).join('')}</ul>`
  const schedule =
    s.schedule.rate === null
      ? `${int(s.schedule.visitors)} visitors over ${s.schedule.over / 1000} s${s.schedule.ramp ? ' (a ramp)' : ''}`
      : `${s.schedule.rate} visitors a second for ${s.schedule.over / 1000} s`
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    `<meta name="robots" content="noindex"><title>airlock hug: ${escapeHtml(s.url)}</title><style>${STYLE}</style></head><body>` +
    `<header><h1>Hug rehearsal of ${escapeHtml(s.url)}</h1><p>${escapeHtml(s.startedAt.slice(0, 19).replace('T', ' '))} UTC · ${escapeHtml(schedule)} · ${s.seconds} s</p></header><main>` +
    `<section><h2>Result</h2>${verdict}</section>` +
    '<section><h2>Totals</h2><table><tbody>' +
    row(
      'Visitors',
      `${int(v.arrived)} arrived from ${int(s.sources)} address(es); ${int(v.admitted)} admitted (${int(v.admittedFromLine)} from the line), ${int(v.gaveUp)} gave up`,
    ) +
    row(
      'Most at once',
      `${int(v.onSiteMax)} on the site${s.limit === null ? '' : ` (limit ${int(s.limit)})`}, ${int(v.inLineMax)} in line`,
    ) +
    row('Answers', `${int(s.answers.requests)} requests: ${answerLine(s.answers)}`) +
    row('The crowd', answerLine(s.crowd)) +
    (s.flood
      ? row(
          'The flood',
          `${int(s.flood.connections)} connections, ${int(s.flood.requests)} requests: ${answerLine(s.flood)}`,
        )
      : '') +
    row('Pages', spreadLine(s.pages)) +
    row('Waits (arrival to admission)', spreadLine(s.waits)) +
    `</tbody></table></section><section><h2>Second by second</h2><div class="charts">${charts.join('')}</div></section>` +
    '</main></body></html>'
  )
}
