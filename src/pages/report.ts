/**
 * The history report as one self-contained HTML page: inline style, the charts as inline SVG drawn
 * here (no script at all), the totals and the busiest minutes as tables. It prints on A4 or Letter
 * (`@media print`: no backgrounds, charts kept whole). Its CSP allows its own style only.
 */
import type { HistoryReport, HistoryRow } from '../core/report.js'
import { lineChart, type Series } from './chart.js'
import { escapeHtml, REDUCED_MOTION, sha256Source } from './csp.js'

const STYLE =
  'body{margin:0;font:14px/1.45 system-ui,sans-serif;background:#f4f5f7;color:#1d2330}header{padding:1em 1.5em;background:#1d2330;color:#fff}' +
  'header h1{margin:0;font-size:1.3em}header p{margin:.2em 0 0;opacity:.8}main{padding:0 1em 1em}' +
  'section{background:#fff;margin:1em 0;padding:1em;border-radius:8px;box-shadow:0 1px 3px #0002}h2{margin:0 0 .6em;font-size:1.1em}' +
  '.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(26em,1fr));gap:1em}figure{margin:0;break-inside:avoid}' +
  'figcaption{font-size:.85em;color:#445}svg{width:100%;height:auto;background:#fafbfc;border:1px solid #e3e5e8;border-radius:4px}' +
  'table{border-collapse:collapse;width:100%;font-size:.9em}td,th{text-align:left;padding:.25em .5em;border-bottom:1px solid #e3e5e8}' +
  'td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}' +
  '@media print{body{background:#fff;font-size:11pt}header{background:none;color:#000;border-bottom:2px solid #000}' +
  'section{box-shadow:none;border:1px solid #ccc;break-inside:avoid}.charts{grid-template-columns:1fr 1fr}@page{margin:12mm}}' +
  REDUCED_MOTION

/** The page's Content-Security-Policy: its inline style, nothing else (no script, no request). */
export const REPORT_CSP = `default-src 'none'; style-src ${sha256Source(STYLE)}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

/** Points drawn at most per chart: longer ranges are drawn per group of minutes. */
const MAX_POINTS = 1440

/** The report as one HTML page (see the module doc). */
export function renderReportHtml(report: HistoryReport): string {
  const name = escapeHtml(report.name)
  const t = report.totals
  const span = `${report.from.slice(0, 16).replace('T', ' ')} to ${report.to.slice(0, 16).replace('T', ' ')} UTC`
  const { rows, group } = grouped(report.rows)
  const times = rows.map((r) => Date.parse(r.minute))
  const per = group === 1 ? '' : `, the most of each ${group} minutes`
  const from = Date.parse(report.from)
  const to = Math.max(Date.parse(report.to), from + 60_000)
  const chart = (title: string, series: readonly Series[], unit: string): string =>
    lineChart({
      title,
      times,
      from,
      to,
      series,
      unit,
      gap: Math.max(60_000, ((to - from) / MAX_POINTS) * 1.5),
      tick: (t) => new Date(t).toISOString().slice(5, 16).replace('T', ' '),
    })
  const charts = [
    chart(
      `In line at the minute’s end${per}`,
      [{ label: 'in line', color: '#7c3aed', values: rows.map((r) => r.inLine) }],
      '',
    ),
    chart(
      `Admitted a minute${per}`,
      [
        { label: 'admitted', color: '#16a34a', values: rows.map((r) => r.admitted) },
        { label: 'turned away', color: '#dc2626', values: rows.map((r) => r.turnedAway) },
      ],
      '',
    ),
    chart(
      `Wait in line (s)${per}`,
      [
        { label: 'p50', color: '#2563eb', values: rows.map((r) => r.waitP50) },
        { label: 'p90', color: '#ea580c', values: rows.map((r) => r.waitP90) },
      ],
      ' s',
    ),
    chart(
      `Visit length (s)${per}`,
      [
        { label: 'p50', color: '#0891b2', values: rows.map((r) => r.visitP50) },
        { label: 'p90', color: '#9333ea', values: rows.map((r) => r.visitP90) },
      ],
      ' s',
    ),
  ]
  const figure = (label: string, value: string): string =>
    `<tr><th scope="row">${label}</th><td class="n">${value}</td></tr>`
  const n = (v: number | null, unit = ''): string => (v === null ? '–' : `${Math.round(v * 10) / 10}${unit}`)
  const reasons = Object.entries(t.turnedAwayBy)
    .map(([k, v]) => `${escapeHtml(k)} ${v}`)
    .join(', ')
  const causes = Object.entries(t.releasedBy)
    .map(([k, v]) => `${escapeHtml(k)} ${v}`)
    .join(', ')
  const busiest = [...report.rows].sort((a, b) => b.admitted + b.turnedAway - (a.admitted + a.turnedAway)).slice(0, 10)
  const head = [
    'minute (UTC)',
    'admitted',
    'from line',
    'turned away',
    'abandoned',
    'in line',
    'wait p50 s',
    'wait p90 s',
    'visit p50 s',
  ]
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    `<meta name="robots" content="noindex"><title>airlock-shield report: ${name}</title><style>${STYLE}</style></head><body>` +
    `<header><h1>Gate ${name}: what the visitors saw</h1><p>${span} · ${t.minutes} minute(s) with visitors</p></header><main>` +
    '<section><h2>Totals</h2><table><tbody>' +
    figure('Admitted', `${t.admitted} (${t.admittedFromLine} from the line; at most ${t.admittedPeak} in a minute)`) +
    figure('Turned away', `${t.turnedAway}${reasons ? ` (${reasons})` : ''}`) +
    figure('Gave up their place in line', String(t.abandoned)) +
    figure('Visits ended', `${t.released}${causes ? ` (${causes})` : ''}`) +
    figure('Most in line', n(t.inLineMax)) +
    figure(
      'Wait in line p50 / p90 / longest',
      `${n(t.waitP50, ' s')} / ${n(t.waitP90, ' s')} / ${n(t.waitMax, ' s')}`,
    ) +
    figure('Visit length p50 / p90', `${n(t.visitP50, ' s')} / ${n(t.visitP90, ' s')}`) +
    `</tbody></table></section><section><h2>Minute by minute</h2><div class="charts">${charts.join('')}</div></section>` +
    `<section><h2>Busiest minutes</h2><table><thead><tr>${head.map((h, i) => `<th${i ? ' class="n"' : ''} scope="col">${h}</th>`).join('')}</tr></thead><tbody>` +
    busiest
      .map((r) => {
        const cells = [
          r.admitted,
          r.admittedFromLine,
          r.turnedAway,
          r.abandoned,
          r.inLine,
          r.waitP50,
          r.waitP90,
          r.visitP50,
        ]
        return `<tr><td>${r.minute.slice(0, 16).replace('T', ' ')}</td>${cells.map((c) => `<td class="n">${n(c)}</td>`).join('')}</tr>`
      })
      .join('') +
    '</tbody></table></section></main></body></html>'
  )
}

/** At most {@link MAX_POINTS} rows: consecutive rows grouped, each figure the group's largest. */
function grouped(rows: readonly HistoryRow[]): { rows: HistoryRow[]; group: number } {
  const group = Math.max(1, Math.ceil(rows.length / MAX_POINTS))
  if (group === 1) return { rows: [...rows], group }
  const out: HistoryRow[] = []
  const most = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.max(a, b))
  for (let i = 0; i < rows.length; i += group) {
    const slice = rows.slice(i, i + group)
    const acc = { ...slice[0]! }
    for (const r of slice) {
      acc.admitted = Math.max(acc.admitted, r.admitted)
      acc.turnedAway = Math.max(acc.turnedAway, r.turnedAway)
      acc.inLine = most(acc.inLine, r.inLine)
      acc.waitP50 = most(acc.waitP50, r.waitP50)
      acc.waitP90 = most(acc.waitP90, r.waitP90)
      acc.visitP50 = most(acc.visitP50, r.visitP50)
      acc.visitP90 = most(acc.visitP90, r.visitP90)
    }
    out.push(acc)
  }
  return { rows: out, group }
}
