import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  ADMITTED_JSON,
  admittedJson,
  describeEta,
  queuedJson,
  renderWaitingPage,
  WAITING_PAGE_CSP,
  WAITING_PAGE_SCRIPT,
  WAITING_PAGE_STYLE,
  waitingPageHashes,
} from '../../src/pages/waiting.js'

const base = {
  order: 'fifo' as const,
  position: 452,
  waiting: 900,
  eta: 31,
  pollInterval: 2000,
  keepAliveInterval: 8000,
  nonce: undefined,
}

describe('built-in waiting page', () => {
  it('is self-contained and under 4 KB even with a long nonce and a huge line', () => {
    const nonce = 'a-long-nonce-value-0123456789abcdef0123456789'
    const html = renderWaitingPage({ ...base, position: 99_999_999, waiting: 99_999_999, eta: 9_999_999, nonce })
    expect(Buffer.byteLength(html)).toBeLessThan(4096)
    // No external asset (the script's favicon, set once admitted, is a data: URL).
    expect(html.replace(WAITING_PAGE_SCRIPT, '')).not.toMatch(/<(link|img|iframe)|src=|url\(|@import|href=/)
    expect(WAITING_PAGE_SCRIPT).toMatch(/i\.href="data:image\/svg\+xml,/)
    expect(html).toContain(`<script nonce="${nonce}">${WAITING_PAGE_SCRIPT}</script>`)
    expect(html).toContain(`<style nonce="${nonce}">${WAITING_PAGE_STYLE}</style>`)
  })

  it('shows the position and the estimate in fifo order, the waiting count in random order', () => {
    const fifo = renderWaitingPage(base)
    expect(fifo).toContain('Your place in line: <b id="p">452</b> of <span id="w">900</span>')
    expect(fifo).toContain('Estimated wait: <span id="e">about 31 seconds</span>')
    expect(fifo).toContain('data-poll="2000" data-keep="8000"')
    const random = renderWaitingPage({ ...base, order: 'random', position: null, eta: null })
    expect(random).toContain('People waiting: <b id="w">900</b>.')
    expect(random).not.toContain('id="p"')
  })

  it('describes the estimate for people', () => {
    expect(describeEta(null)).toBe('working it out')
    expect(describeEta(1)).toBe('about 1 second')
    expect(describeEta(31)).toBe('about 31 seconds')
    expect(describeEta(59)).toBe('about 59 seconds')
    expect(describeEta(150)).toBe('about 3 minutes')
  })

  it('has a no-JS meta refresh of the poll interval plus up to a second', () => {
    const delays = new Set<number>()
    for (let i = 0; i < 100; i++) {
      delays.add(
        Number(
          /<meta http-equiv="refresh" content="(\d+)">/.exec(renderWaitingPage({ ...base, pollInterval: 3000 }))![1],
        ),
      )
    }
    expect([...delays].sort()).toEqual([3, 4])
  })

  it('exports the hashes of its inline script and style; its policy allows polling its own origin only', () => {
    const h = (t: string) => `'sha256-${createHash('sha256').update(t).digest('base64')}'`
    expect(waitingPageHashes.script).toBe(h(WAITING_PAGE_SCRIPT))
    expect(waitingPageHashes.style).toBe(h(WAITING_PAGE_STYLE))
    expect(WAITING_PAGE_CSP).toContain(`script-src ${waitingPageHashes.script}`)
    expect(WAITING_PAGE_CSP).toContain("connect-src 'self'")
    expect(WAITING_PAGE_CSP).toContain("default-src 'none'")
    // The favicon it shows once admitted in a background tab: a data: URL, nothing fetched.
    expect(WAITING_PAGE_CSP).toContain('img-src data:;')
  })

  it('has the "tell me" toggle (hidden until the script shows it) before "Leave the line", and the words of the admitted title', () => {
    const html = renderWaitingPage(base)
    expect(html).toContain(
      '<button type="button" id="n" aria-pressed="false" hidden>Tell me when it is my turn</button> <button>Leave the line</button></form>',
    )
    expect(html).toContain('data-turn="Your turn"')
  })

  it('the admitted poll tells the page how long it may wait on a hidden tab, when it may', () => {
    expect(JSON.parse(admittedJson(30_000))).toEqual({ status: 'admitted', hold: 30_000 })
    expect(admittedJson(undefined)).toBe(ADMITTED_JSON)
    expect(JSON.parse(ADMITTED_JSON)).toEqual({ status: 'admitted' })
  })

  it('escapes the nonce; the JSON carries position, eta (s) and waiting', () => {
    expect(renderWaitingPage({ ...base, nonce: '"><script>x</script>' })).not.toContain('"><script>x')
    expect(JSON.parse(queuedJson(452, 900, 31))).toEqual({ status: 'queued', position: 452, eta: 31, waiting: 900 })
    expect(JSON.parse(queuedJson(null, 3, null))).toEqual({ status: 'queued', position: null, eta: null, waiting: 3 })
  })
})
