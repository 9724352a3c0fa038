import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  BUSY_PAGE_CSP,
  BUSY_PAGE_SCRIPT,
  BUSY_PAGE_STYLE,
  busyJson,
  busyPageHashes,
  escapeHtml,
  renderBusyPage,
} from '../../src/pages/busy.js'
import { BusyAnswers } from '../../src/pages/answers.js'

describe('built-in busy page', () => {
  it("the gate's answers keep the jitter though each page is rendered once: a crowd's refusals show several delays", () => {
    const answers = new BusyAnswers({ retryAfter: 10, page: undefined }, () => {})
    const r = {
      method: 'GET',
      accept: 'text/html',
      acceptLanguage: undefined,
      request: undefined,
      nonce: () => undefined,
    }
    const delays = new Set<string>()
    for (let i = 0; i < 200; i++) delays.add(/<b id="s">( *\d+)<\/b>/.exec(answers.busy(r).body)![1]!.trim())
    // 0.5x..1.5x of 10 s: 5 to 15, eleven whole seconds; 200 draws miss one with odds under 1e-7.
    expect(delays.size).toBe(11)
    expect(answers.busy(r, 'client-share').body).toContain('network address')
  })

  it('is self-contained and under 2 KB', () => {
    const html = renderBusyPage(120, 'a-long-nonce-value-0123456789abcdef0123456789')
    expect(Buffer.byteLength(html)).toBeLessThan(2048)
    expect(html).not.toMatch(/<(link|img|iframe)|src=|url\(|@import/)
    expect(html).toContain(`<script nonce="a-long-nonce-value-0123456789abcdef0123456789">${BUSY_PAGE_SCRIPT}</script>`)
    expect(html).toMatch(/<b id="s"> *\d+<\/b>/)
  })

  it('shows one jittered whole-second delay (0.5x..1.5x retryAfter), the countdown and the no-JS refresh alike; one length per retryAfter', () => {
    for (const retryAfter of [1, 2, 7, 10, 120]) {
      const delays = new Set<number>()
      const lengths = new Set<number>()
      for (let i = 0; i < 300; i++) {
        const html = renderBusyPage(retryAfter)
        const shown = /<b id="s">( *\d+)<\/b>/.exec(html)![1]!
        expect(html).toContain(`<noscript><meta http-equiv="refresh" content="${shown}"></noscript>`)
        delays.add(Number(shown))
        lengths.add(html.length)
      }
      expect(Math.min(...delays)).toBeGreaterThanOrEqual(Math.max(1, Math.round(retryAfter * 0.5)))
      expect(Math.max(...delays)).toBeLessThanOrEqual(Math.round(retryAfter * 1.5))
      if (retryAfter >= 2) expect(delays.size).toBeGreaterThan(1)
      expect(lengths.size).toBe(1)
    }
  })

  it('exports the hashes of its inline script and style for strict CSPs', () => {
    const h = (t: string) => `'sha256-${createHash('sha256').update(t).digest('base64')}'`
    expect(busyPageHashes.script).toBe(h(BUSY_PAGE_SCRIPT))
    expect(busyPageHashes.style).toBe(h(BUSY_PAGE_STYLE))
    expect(BUSY_PAGE_CSP).toContain(`script-src ${busyPageHashes.script}`)
    expect(BUSY_PAGE_CSP).toContain(`style-src ${busyPageHashes.style}`)
  })

  it('escapes what it inserts, and the JSON carries retryAfter exactly', () => {
    expect(escapeHtml(`<"'&>`)).toBe('&#60;&#34;&#39;&#38;&#62;')
    expect(renderBusyPage(5, '"><script>x</script>')).not.toContain('"><script>x')
    expect(JSON.parse(busyJson(7))).toEqual({ status: 'busy', reason: 'full', retryAfter: 7 })
  })
})
