/**
 * Checks of a page in real Chromium: axe-core (WCAG 2.1 A and AA rules and its best practices; injected by the test: the
 * pages' own policies allow only their hashed scripts, so the context bypasses the CSP), the
 * console's errors, and a report page's SVG charts.
 */
import { createRequire } from 'node:module'
import type { Browser, Page } from 'playwright-core'

const axeSource: string = (createRequire(import.meta.url)('axe-core') as { source: string }).source

/** The violations axe finds on `page` as it stands (axe injected first). */
export async function axeViolations(
  page: Page,
): Promise<{ id: string; help: string; nodes: { target: string[] }[] }[]> {
  await page.evaluate(axeSource)
  return (await page.evaluate(() =>
    (
      globalThis as unknown as {
        axe: { run(o: object): Promise<{ violations: { id: string; help: string; nodes: { target: string[] }[] }[] }> }
      }
    ).axe
      .run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
      .then((r) => r.violations),
  )) as { id: string; help: string; nodes: { target: string[] }[] }[]
}

/** `width id: help` for every violation axe finds at `url` in each viewport width. */
export async function axeAtWidths(
  browser: Browser,
  url: string,
  widths: readonly number[] = [320, 1280],
): Promise<string[]> {
  const found: string[] = []
  for (const width of widths) {
    const context = await browser.newContext({ viewport: { width, height: 800 }, bypassCSP: true })
    const page = await context.newPage()
    try {
      await page.goto(url)
      for (const v of await axeViolations(page)) found.push(`${width}px ${v.id}: ${v.help}`)
    } finally {
      await context.close()
    }
  }
  return found
}

/** The console errors and warnings, and uncaught errors, of `page` from now on. */
export function pageProblems(page: Page): string[] {
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(e.message))
  return problems
}

/** The SVG charts of a report page (`svg[data-chart]`): title, width, drawn path lengths, dots, tick labels. */
export function reportCharts(
  page: Page,
): Promise<{ title: string | null; width: number; drawn: number[]; dots: number; ticks: string[] }[]> {
  return page.$$eval('svg[data-chart]', (svgs) =>
    svgs.map((s) => ({
      title: s.getAttribute('data-chart'),
      width: s.getBoundingClientRect().width,
      drawn: [...s.querySelectorAll('path')].map((p) =>
        (p as unknown as { getTotalLength(): number }).getTotalLength(),
      ),
      dots: s.querySelectorAll('circle').length,
      ticks: [...s.querySelectorAll('text')].map((t) => t.textContent ?? ''),
    })),
  )
}
