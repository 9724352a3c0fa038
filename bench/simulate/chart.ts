/**
 * The simulator's charts: for one backend, a panel per cell (a row per arrival schedule, a column
 * per fleet size) with the capacity C (grey, dashed), the limit in force (blue: the most any
 * instance lets in), what was inside the backend (green) and failures (red ticks, per 50 ms).
 */
import type { Judged } from './matrix.js'

const W = 230
const H = 120
const PAD = { left: 28, top: 36, gap: 12 }

export function chart(title: string, cells: Judged[]): string {
  const schedules = [...new Set(cells.map((c) => c.schedule))]
  const fleets = [...new Set(cells.map((c) => c.instances))]
  const width = PAD.left + fleets.length * (W + PAD.gap)
  const height = PAD.top + schedules.length * (H + PAD.gap) + 16
  const yMax = Math.max(...cells.flatMap((c) => c.phases.map((p) => p.capacity))) * 1.5
  const panels = cells.map((c) => {
    const x0 = PAD.left + fleets.indexOf(c.instances) * (W + PAD.gap)
    const y0 = PAD.top + schedules.indexOf(c.schedule) * (H + PAD.gap)
    const total = c.timeline.at(-1)?.[0] ?? 1
    const x = (t: number): string => (x0 + (t / total) * W).toFixed(1)
    const y = (v: number): string => (y0 + H - (Math.min(v, yMax) / yMax) * H).toFixed(1)
    const phaseMs = total / c.phases.length
    const capacity = c.phases
      .map((p, i) => `${i ? 'L' : 'M'}${x(i * phaseMs)} ${y(p.capacity)}L${x((i + 1) * phaseMs)} ${y(p.capacity)}`)
      .join('')
    // Every other point: 100 ms apart is finer than a panel's pixels.
    const points = c.timeline.filter((_, i) => i % 2 === 0)
    const line = (k: 1 | 2): string => points.map((p, i) => `${i ? 'L' : 'M'}${x(p[0])} ${y(p[k])}`).join('')
    const failures = c.timeline
      .filter((p) => p[3] > 0)
      .map((p) => `M${x(p[0])} ${y0 + H}v${-Math.min(H, 2 + p[3])}`)
      .join('')
    const label = `${c.schedule}, N = ${c.instances}${c.misses.length ? ' (misses a bar)' : ''}`
    return [
      `<rect x="${x0}" y="${y0}" width="${W}" height="${H}" fill="#fafafa" stroke="#ddd"/>`,
      `<text x="${x0 + 4}" y="${y0 + 12}" font-size="10" fill="${c.misses.length ? '#b91c1c' : '#333'}">${label}</text>`,
      `<path d="${capacity}" fill="none" stroke="#9ca3af" stroke-width="2" stroke-dasharray="5 3"/>`,
      `<path d="${line(2)}" fill="none" stroke="#16a34a" stroke-width="0.8"/>`,
      `<path d="${line(1)}" fill="none" stroke="#2563eb" stroke-width="1.2"/>`,
      failures ? `<path d="${failures}" stroke="#dc2626" stroke-width="1"/>` : '',
    ].join('')
  })
  const legend =
    `<text x="${PAD.left}" y="16" font-size="13" font-weight="600" fill="#111">${title}</text>` +
    `<text x="${PAD.left}" y="30" font-size="10" fill="#444"><tspan fill="#9ca3af">- - C</tspan>   <tspan fill="#2563eb">— limit in force</tspan>   <tspan fill="#16a34a">— inside the backend</tspan>   <tspan fill="#dc2626">| failures (per 50 ms)</tspan>   y: 0 to ${Math.round(yMax)}</text>`
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" font-family="system-ui,sans-serif"><rect width="${width}" height="${height}" fill="#fff"/>${legend}${panels.join('')}</svg>\n`
}
