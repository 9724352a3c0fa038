import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { BUSY_PAGE_CSP, BUSY_PAGE_SCRIPT, BUSY_PAGE_STYLE, busyJson, busyPageHashes, escapeHtml, renderBusyPage } from '../../src/pages/busy.js'

describe('built-in busy page', () => {
  it('is self-contained and under 2 KB', () => {
    const html = renderBusyPage(120, 'a-long-nonce-value-0123456789abcdef0123456789')
    expect(Buffer.byteLength(html)).toBeLessThan(2048)
    expect(html).not.toMatch(/<(link|img|iframe)|src=|url\(|@import/)
    expect(html).toContain(`<script nonce="a-long-nonce-value-0123456789abcdef0123456789">${BUSY_PAGE_SCRIPT}</script>`)
    expect(html).toContain('<b id="s">120</b>')
  })

  it('has a jittered no-JS meta refresh between retryAfter and 1.5x', () => {
    const delays = new Set<number>()
    for (let i = 0; i < 200; i++) {
      const m = /<noscript><meta http-equiv="refresh" content="(\d+)"><\/noscript>/.exec(renderBusyPage(10))
      delays.add(Number(m![1]))
    }
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(10)
    expect(Math.max(...delays)).toBeLessThanOrEqual(15)
    expect(delays.size).toBeGreaterThan(2)
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
    expect(JSON.parse(busyJson(7))).toEqual({ status: 'busy', retryAfter: 7 })
  })
})
