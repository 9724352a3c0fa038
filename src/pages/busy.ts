import { createHash } from 'node:crypto'

/** What a custom `busyPage` function receives. */
export interface BusyPageContext {
  /** Seconds, as sent in `Retry-After`. */
  retryAfter: number
  /** The framework's request object (Fastify `request`, Express `req`). */
  request: unknown
  /** The CSP nonce from the `nonce` option, if any. */
  nonce: string | undefined
}

/** A custom busy page: an HTML string, or a function returning one. */
export type BusyPage = string | ((context: BusyPageContext) => string)

/**
 * The built-in page's script: counts down from the `Retry-After` value shown in `#s`, jittered to
 * 0.5x..1.5x so that retries of a crowd spread out instead of arriving in waves, then loads the page
 * again (always a GET, never a form re-post). Static, so it can be allowed by hash.
 */
export const BUSY_PAGE_SCRIPT =
  '(function(){var e=document.getElementById("s"),n=+e.textContent||5,d=Date.now()+n*(500+1e3*Math.random());' +
  'function t(){var l=d-Date.now();if(l<=0){location.replace(location.href.split("#")[0]);return}' +
  'e.textContent=Math.ceil(l/1e3);setTimeout(t,Math.min(1e3,l))}t()})()'

/** The built-in page's style. Static, so it can be allowed by hash. */
export const BUSY_PAGE_STYLE =
  'body{margin:0;min-height:100vh;display:grid;place-items:center;font:17px/1.5 system-ui,sans-serif;' +
  'background:#f4f5f7;color:#1d2330}main{max-width:30em;padding:2em;text-align:center}' +
  'h1{font-size:1.5em;margin:0 0 .5em}a{color:#2356c7}'

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`

/**
 * CSP sources that allow the built-in page's inline script and style, for a site whose own policy
 * also applies to the busy response: add `busyPageHashes.script` to `script-src` and
 * `busyPageHashes.style` to `style-src` (or use the `nonce` option).
 */
export const busyPageHashes = Object.freeze({ script: sha256(BUSY_PAGE_SCRIPT), style: sha256(BUSY_PAGE_STYLE) })

/** The policy sent with the built-in page: nothing but its own script and style. */
export const BUSY_PAGE_CSP =
  `default-src 'none'; script-src ${busyPageHashes.script}; style-src ${busyPageHashes.style}; ` +
  `base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/**
 * The built-in busy page (under 2 KB, no external assets). Retries by itself with JS (jittered);
 * without JS, a `<noscript>` meta refresh retries after `retryAfter` plus up to half of it again.
 */
export function renderBusyPage(retryAfter: number, nonce?: string): string {
  const n = nonce === undefined ? '' : ` nonce="${escapeHtml(nonce)}"`
  const noJsDelay = retryAfter + Math.floor(Math.random() * (Math.ceil(retryAfter / 2) + 1))
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">' +
    '<title>Busy, please wait</title>' +
    `<noscript><meta http-equiv="refresh" content="${noJsDelay}"></noscript>` +
    `<style${n}>${BUSY_PAGE_STYLE}</style></head><body><main>` +
    '<h1>Lots of visitors right now</h1>' +
    `<p>We let people in a few at a time so the site stays up. This page tries again by itself in <b id="s">${retryAfter}</b> s.</p>` +
    '<p><a href="">Try now</a></p>' +
    `</main><script${n}>${BUSY_PAGE_SCRIPT}</script></body></html>`
  )
}

/** The JSON body for clients that prefer JSON. */
export function busyJson(retryAfter: number): string {
  return `{"status":"busy","retryAfter":${retryAfter}}`
}
