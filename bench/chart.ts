/**
 * Draws the bench results as small hand-written SVG charts: `npm run bench:chart`.
 * Reads BENCH_RESULTS (default bench/results) *.json written by the benches and writes
 * docs/benchmarks-overhead.svg, docs/benchmarks-semaphore.svg and docs/benchmarks-hug.svg (or into
 * CHART_DIR). A chart whose results are missing is skipped with a note.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const resultsDir = process.env.BENCH_RESULTS ?? fileURLToPath(new URL('./results', import.meta.url))
const outDir = process.env.CHART_DIR ?? fileURLToPath(new URL('../docs', import.meta.url))

const esc = (s: string): string => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)
const COLORS = {
  blue: '#2f6fd6',
  light: '#9dbcf0',
  green: '#2e9e5b',
  grey: '#9aa1ad',
  red: '#d64545',
  orange: '#e0902f',
  ink: '#1d2330',
}
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif"'

function read<T>(name: string): T | undefined {
  const file = join(resultsDir, `${name}.json`)
  if (!existsSync(file)) {
    console.log(`chart: no ${file}, skipped`)
    return undefined
  }
  return JSON.parse(readFileSync(file, 'utf8')) as T
}

interface Segment {
  value: number
  color: string
  label?: string
}
interface Bar {
  label: string
  /** Stacked segments, drawn left to right. */
  segments: Segment[]
  /** A thin second bar under the first (e.g. the CPU ratio). */
  under?: Segment
  note?: string
}

/** A horizontal bar chart: one row per bar, optional vertical guide lines, a legend. */
function barChart(opts: {
  title: string
  subtitle: string
  bars: Bar[]
  max: number
  guides?: { at: number; label: string }[]
  legend: Segment[]
  format: (v: number) => string
}): string {
  // Room for the longest label at about 7 px per character of 13 px text.
  const left = 24 + Math.max(...opts.bars.map((b) => b.label.length)) * 7
  const plot = 440
  const right = 110
  const width = left + plot + right
  const row = opts.bars.some((b) => b.under) ? 34 : 26
  const top = 72
  const height = top + opts.bars.length * row + 56
  const x = (v: number): number => left + (Math.max(0, v) / opts.max) * plot
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT} font-size="13">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="16" y="24" font-size="16" font-weight="600" fill="${COLORS.ink}">${esc(opts.title)}</text>`,
    `<text x="16" y="44" fill="#555">${esc(opts.subtitle)}</text>`,
  ]
  ;(opts.guides ?? []).forEach((g, i) => {
    // Labels alternate below and above the plot so that close guides stay readable.
    const labelY = i % 2 === 0 ? top + opts.bars.length * row + 14 : top - 10
    out.push(
      `<line x1="${x(g.at)}" y1="${top - 6}" x2="${x(g.at)}" y2="${top + opts.bars.length * row}" stroke="#888" stroke-dasharray="4 3"/>`,
      `<text x="${x(g.at)}" y="${labelY}" text-anchor="middle" fill="#555" font-size="11">${esc(g.label)}</text>`,
    )
  })
  opts.bars.forEach((b, i) => {
    const y = top + i * row
    out.push(`<text x="${left - 8}" y="${y + 15}" text-anchor="end" fill="${COLORS.ink}">${esc(b.label)}</text>`)
    let at = 0
    for (const s of b.segments) {
      if (s.value > 0)
        out.push(
          `<rect x="${x(at)}" y="${y + 3}" width="${x(at + s.value) - x(at)}" height="16" fill="${s.color}"><title>${esc(s.label ?? '')} ${esc(opts.format(s.value))}</title></rect>`,
        )
      at += s.value
    }
    out.push(`<text x="${x(at) + 6}" y="${y + 15}" fill="${COLORS.ink}">${esc(b.note ?? opts.format(at))}</text>`)
    if (b.under) {
      out.push(
        `<rect x="${x(0)}" y="${y + 21}" width="${x(b.under.value) - x(0)}" height="6" fill="${b.under.color}"/>`,
        `<text x="${x(b.under.value) + 6}" y="${y + 28}" fill="#555" font-size="11">${esc(opts.format(b.under.value))}</text>`,
      )
    }
  })
  let lx = 16
  const ly = height - 18
  for (const s of opts.legend) {
    out.push(
      `<rect x="${lx}" y="${ly - 10}" width="12" height="12" fill="${s.color}"/>`,
      `<text x="${lx + 18}" y="${ly}" fill="${COLORS.ink}">${esc(s.label ?? '')}</text>`,
    )
    lx += 30 + (s.label ?? '').length * 7
  }
  out.push('</svg>')
  return `${out.join('\n')}\n`
}

interface Machine {
  cpus: number
  model: string
  node: string
  redis?: string
}
const machineLine = (m: Machine): string =>
  `${m.cpus} x ${m.model}, node ${m.node}${m.redis ? `, redis ${m.redis}` : ''}`

function write(name: string, svg: string): void {
  mkdirSync(outDir, { recursive: true })
  const file = join(outDir, name)
  writeFileSync(file, svg)
  console.log(`chart: ${file}`)
}

const overhead = read<{
  machine: Machine
  settings: { connections: number }
  rows: { name: string; ratio: number; cpuRatio: number }[]
}>('overhead')
if (overhead) {
  write(
    'benchmarks-overhead.svg',
    barChart({
      title: 'What each request costs: throughput relative to the bare framework',
      subtitle: `hello world, ${overhead.settings.connections} connections, ${machineLine(overhead.machine)}`,
      bars: overhead.rows.map((r) => ({
        label: r.name,
        segments: [{ value: r.ratio, color: COLORS.blue, label: 'req/s ratio' }],
        under: { value: r.cpuRatio, color: COLORS.light, label: 'CPU ratio' },
      })),
      max: Math.max(1.2, ...overhead.rows.map((r) => Math.max(r.ratio, r.cpuRatio))),
      guides: [
        { at: 0.6, label: '0.6x' },
        { at: 0.9, label: '0.9x' },
        { at: 1, label: '1x' },
      ],
      legend: [
        { value: 0, color: COLORS.blue, label: 'req/s vs bare (same framework)' },
        { value: 0, color: COLORS.light, label: 'server CPU per request: bare / this' },
      ],
      format: (v) => `${v.toFixed(2)}x`,
    }),
  )
}

const semaphore = read<{ machine: Machine; rows: { label: string; pairs: number; lib: string }[] }>('semaphore')
if (semaphore) {
  write(
    'benchmarks-semaphore.svg',
    barChart({
      title: 'Acquire + release pairs per second on Redis',
      subtitle: machineLine(semaphore.machine),
      bars: semaphore.rows.map((r) => ({
        label: r.label,
        segments: [{ value: r.pairs, color: r.lib === 'airlock-shield' ? COLORS.blue : COLORS.grey, label: r.lib }],
      })),
      max: Math.max(...semaphore.rows.map((r) => r.pairs)) * 1.05,
      legend: [
        { value: 0, color: COLORS.blue, label: 'airlock-shield' },
        { value: 0, color: COLORS.grey, label: 'redis-semaphore' },
      ],
      format: (v) => `${Math.round(v).toLocaleString('en-US')}/s`,
    }),
  )
}

const hug = read<{
  machine: Machine
  settings: { visitors: number; seconds: number; capacity: number; limit: number; workMs: number }
  rows: { label: string; status: Record<string, number>; aborted: number }[]
}>('hug')
if (hug) {
  const s = hug.settings
  write(
    'benchmarks-hug.svg',
    barChart({
      title: `A hug of ${s.visitors} visitors: what the answers were`,
      subtitle: `backend ${s.workMs} ms per page, 500s above ${s.capacity} in flight; shield limit ${s.limit}; ${s.seconds} s each; ${machineLine(hug.machine)}`,
      bars: hug.rows.map((r) => {
        const total = Object.values(r.status).reduce((a, b) => a + b, 0) + r.aborted
        const share = (n: number | undefined): number => (n ?? 0) / Math.max(1, total)
        return {
          label: r.label,
          segments: [
            { value: share(r.status['200']), color: COLORS.green, label: 'page' },
            { value: share(r.status['503']), color: COLORS.grey, label: 'busy page' },
            { value: share(r.status['202']), color: COLORS.blue, label: 'waiting room' },
            { value: share(r.status['500']), color: COLORS.red, label: '500' },
            { value: share(r.aborted), color: COLORS.orange, label: 'given up' },
          ],
          note: `${Math.round(share(r.status['500']) * 100)} % 500s`,
        }
      }),
      max: 1,
      legend: [
        { value: 0, color: COLORS.green, label: 'page (200)' },
        { value: 0, color: COLORS.grey, label: 'busy page (503)' },
        { value: 0, color: COLORS.blue, label: 'waiting room (202)' },
        { value: 0, color: COLORS.red, label: 'error (500)' },
        { value: 0, color: COLORS.orange, label: 'given up' },
      ],
      format: (v) => `${Math.round(v * 100)} %`,
    }),
  )
}
