/**
 * What the proxy answers when the origin does not: `502` (it refused or broke the connection) and
 * `504` (it did not answer within `upstreamTimeout`). Small self-contained pages that try again by
 * themselves, like the busy page (the same countdown script and policy), and their JSON twins.
 */
import { BUSY_PAGE_CSP, BUSY_PAGE_SCRIPT, BUSY_PAGE_STYLE, busyPageDelay, escapeHtml } from './busy.js'

/** Seconds a client is told to wait before it tries again after a 502 or 504. */
export const ORIGIN_RETRY_AFTER = 10

const TEXT = {
  502: { status: 'bad-gateway', title: 'Site unavailable', heading: 'The site is not answering', message: 'Its server did not respond.' },
  504: { status: 'gateway-timeout', title: 'Site too slow', heading: 'The site is taking too long', message: 'Its server did not answer in time.' },
} as const

/** The page for `status` (502 or 504): it counts down and loads the page again (a GET), or reloads with a meta refresh without JS. */
export function originErrorPage(status: 502 | 504): string {
  const t = TEXT[status]
  const delay = busyPageDelay(ORIGIN_RETRY_AFTER)
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">' +
    `<title>${t.title}</title><noscript><meta http-equiv="refresh" content="${delay}"></noscript>` +
    `<style>${BUSY_PAGE_STYLE}</style></head><body><main><h1>${t.heading}</h1>` +
    `<p>${escapeHtml(t.message)} This page tries again by itself in <b id="s">${delay}</b> s.</p>` +
    '<p><a href="">Try now</a></p>' +
    `</main><script>${BUSY_PAGE_SCRIPT}</script></body></html>`
  )
}

/** The JSON body for API clients. */
export function originErrorJson(status: 502 | 504): string {
  return `{"status":"${TEXT[status].status}","message":"${TEXT[status].message}","retryAfter":${ORIGIN_RETRY_AFTER}}`
}

/** The response headers of either (`Retry-After`, no caching, the page's own policy). */
export function originErrorHeaders(json: boolean): Record<string, string> {
  return json
    ? { 'content-type': 'application/json', 'cache-control': 'no-store', 'retry-after': String(ORIGIN_RETRY_AFTER) }
    : { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'retry-after': String(ORIGIN_RETRY_AFTER), 'content-security-policy': BUSY_PAGE_CSP }
}
