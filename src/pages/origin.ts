/**
 * What the proxy answers when the origin does not: `502` (it refused or broke the connection) and
 * `504` (it did not answer within `upstreamTimeout`). Small self-contained pages that try again by
 * themselves, like the busy page (the same countdown script and policy), and their JSON twins.
 */
import { BUSY_PAGE_CSP, BUSY_PAGE_SCRIPT, BUSY_PAGE_STYLE, busyPageDelay } from './busy.js'
import { ENGLISH, type PageLanguage } from './language.js'

/** Seconds a client is told to wait before it tries again after a 502 or 504. */
export const ORIGIN_RETRY_AFTER = 10

const TEXT = {
  502: { status: 'bad-gateway', title: 'badGatewayTitle', heading: 'badGatewayHeading', message: 'badGatewayText' },
  504: { status: 'gateway-timeout', title: 'timeoutTitle', heading: 'timeoutHeading', message: 'timeoutText' },
} as const

/**
 * The page for `status` (502 or 504) in `language` (default English): it counts down and loads the
 * page again (a GET), or reloads with a meta refresh without JS.
 */
export function originErrorPage(status: 502 | 504, language: PageLanguage = ENGLISH): string {
  const t = TEXT[status]
  const l = language
  const delay = busyPageDelay(ORIGIN_RETRY_AFTER)
  return (
    `<!doctype html><html${l.htmlAttributes}><head><meta charset="utf-8">` +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">' +
    `<title>${l.html(t.title)}</title><noscript><meta http-equiv="refresh" content="${delay}"></noscript>` +
    `<style>${BUSY_PAGE_STYLE}</style></head><body><main><h1>${l.html(t.heading)}</h1>` +
    `<p>${l.html(t.message)} ${l.html('retryIn', { seconds: `<b id="s">${delay}</b>` })}</p>` +
    `<p><a href="">${l.html('tryNow')}</a></p>` +
    `</main><script>${BUSY_PAGE_SCRIPT}</script></body></html>`
  )
}

/** The JSON body for API clients. */
export function originErrorJson(status: 502 | 504): string {
  return `{"status":"${TEXT[status].status}","message":"${ENGLISH.messages[TEXT[status].message]}","retryAfter":${ORIGIN_RETRY_AFTER}}`
}

/**
 * The response headers of either (`Retry-After`, no caching, the page's own policy); the page's
 * (`language` given) say its language and that it depends on `Accept-Language`.
 */
export function originErrorHeaders(
  json: boolean,
  language?: PageLanguage,
  status: 502 | 504 = 502,
): Record<string, string> {
  // The Airlock header: the proxy answered for an origin that did not (an origin error, not the shield's refusal).
  const airlock = `origin-error; reason=${status === 504 ? 'timeout' : 'refused'}`
  if (json)
    return {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'retry-after': String(ORIGIN_RETRY_AFTER),
      airlock,
    }
  const headers: Record<string, string> = {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'retry-after': String(ORIGIN_RETRY_AFTER),
    'content-security-policy': BUSY_PAGE_CSP,
    airlock,
  }
  if (language !== undefined) {
    headers['content-language'] = language.tag
    headers.vary = 'Accept, Accept-Language'
  }
  return headers
}
