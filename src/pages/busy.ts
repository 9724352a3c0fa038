import { BASE_STYLE, escapeHtml, inlineHashes, pageCsp } from './csp.js'
import { ENGLISH, type PageLanguage, type VisitorLanguage } from './language.js'

export { escapeHtml } from './csp.js'

/** What a custom `busyPage` function receives. */
export interface BusyPageContext {
  /** Seconds, as sent in `Retry-After`. */
  retryAfter: number
  /** The framework's request object (Fastify `request`, Express `req`). */
  request: unknown
  /** The CSP nonce from the `nonce` option, if any. */
  nonce: string | undefined
  /**
   * The visitor's language, negotiated from `Accept-Language` over the gate's catalogue (English
   * when none fits): `tag` and `dir` for `<html>`, `number()`, `duration()` and `eta()` to format,
   * `messages` for the built-in words. The answer carries `Content-Language: <tag>` and `Vary:
   * Accept, Accept-Language`.
   */
  language: VisitorLanguage
  /**
   * Why the visitor is refused, as in the `Airlock` header and the JSON: `full`, `closed`,
   * `store-unavailable`, `challenge-failed`, or `client-share` (many new visits from the
   * visitor's own address: the built-in page says so).
   */
  reason: 'full' | 'store-unavailable' | 'closed' | 'client-share' | 'challenge-failed'
}

/** A custom busy page: an HTML string, or a function returning one. */
export type BusyPage = string | ((context: BusyPageContext) => string)

/**
 * The busy answer's settings: the gate's `busy` option group, resolved once (resolveGateOptions)
 * and handed whole to the answers (src/pages/answers.ts) and to the built-in page. A new busy
 * setting is added here, to its resolution and to the page that uses it, and to no signature between.
 */
export interface BusySettings {
  /** Seconds, sent as `Retry-After` and in the JSON body; the built-in page waits 0.5x..1.5x of it. */
  retryAfter: number
  /** A custom page (HTML, or a function of {@link BusyPageContext}); `undefined`: the built-in page. */
  page: BusyPage | undefined
}

/** What the built-in page is drawn from: the busy settings whole, or `retryAfter` alone (seconds). */
export type BusyPageSettings = number | (Partial<BusySettings> & Pick<BusySettings, 'retryAfter'>)

const retryAfterOf = (busy: BusyPageSettings): number => (typeof busy === 'number' ? busy : busy.retryAfter)

/**
 * The built-in page's script: counts down the whole seconds shown in `#s` (the page's own jittered
 * delay, see {@link busyPageDelay}), changing the number on each whole second left, and when it
 * reaches zero loads the page again (always a GET, never a form re-post). Static, so it can be
 * allowed by hash.
 */
export const BUSY_PAGE_SCRIPT =
  '(function(){var e=document.getElementById("s"),d=Date.now()+1e3*(+e.textContent||5);' +
  'function t(){var l=d-Date.now();if(l<=0){location.replace(location.href.split("#")[0]);return}' +
  'e.textContent=Math.ceil(l/1e3);setTimeout(t,(l-1)%1e3+1)}t()})()'

/** The built-in page's style. Static, so it can be allowed by hash. */
export const BUSY_PAGE_STYLE = `${BASE_STYLE}a{color:#2356c7}`

/**
 * CSP sources that allow the built-in page's inline script and style, for a site whose own policy
 * also applies to the busy response: add `busyPageHashes.script` to `script-src` and
 * `busyPageHashes.style` to `style-src` (or use the `nonce` option).
 */
export const busyPageHashes = inlineHashes(BUSY_PAGE_SCRIPT, BUSY_PAGE_STYLE)

/** The policy sent with the built-in page: nothing but its own script and style. */
export const BUSY_PAGE_CSP = pageCsp(busyPageHashes)

/**
 * The page's retry delay in whole seconds: `retryAfter` jittered to 0.5x..1.5x (rounded, at least
 * 1), so that the retries of a crowd spread out instead of arriving in waves. Padded with spaces to
 * the width of the longest possible delay, so every page for one `retryAfter` has the same length
 * (a `HEAD` answer's `Content-Length` is then the `GET` body's); HTML shows the spaces as one.
 */
export function busyPageDelay(retryAfter: number): string {
  const delay = Math.max(1, Math.round(retryAfter * (0.5 + Math.random())))
  return String(delay).padStart(String(Math.max(1, Math.round(retryAfter * 1.5))).length)
}

/**
 * The built-in busy page (under 2 KB, no external assets) in `language` (default English). It shows the delay after which it tries
 * again ({@link busyPageDelay}), counts it down with JS and reloads at zero; without JS, a
 * `<noscript>` meta refresh reloads after the same delay. `busy`: the gate's busy settings whole
 * ({@link BusySettings}), or its `retryAfter` alone; the rest is the request's.
 */
export function renderBusyPage(
  busy: BusyPageSettings,
  nonce?: string,
  language: PageLanguage = ENGLISH,
  reason: BusyPageContext['reason'] = 'full',
  delay: string = busyPageDelay(retryAfterOf(busy)),
): string {
  const n = nonce === undefined ? '' : ` nonce="${escapeHtml(nonce)}"`
  return (
    `<!doctype html><html${language.htmlAttributes}><head><meta charset="utf-8">` +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">' +
    `<title>${language.html('busyTitle')}</title>` +
    `<noscript><meta http-equiv="refresh" content="${delay}"></noscript>` +
    `<style${n}>${BUSY_PAGE_STYLE}</style></head><body><main>` +
    `<h1>${language.html('busyHeading')}</h1>` +
    `<p>${language.html('busyText')} ${language.html('retryIn', { seconds: `<b id="s">${delay}</b>` })}</p>` +
    (reason === 'client-share' ? `<p>${language.html('busyShare')}</p>` : '') +
    `<p><a href="">${language.html('tryNow')}</a></p>` +
    `</main><script${n}>${BUSY_PAGE_SCRIPT}</script></body></html>`
  )
}

/** The JSON body for clients that prefer JSON: why (`reason`, as in the `Airlock` header) and when to try again. */
export function busyJson(retryAfter: number, reason: BusyPageContext['reason'] = 'full'): string {
  return `{"status":"busy","reason":"${reason}","retryAfter":${retryAfter}}`
}
