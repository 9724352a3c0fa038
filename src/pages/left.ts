/**
 * What a visitor sees after "Leave the line" (issue 27): their place is gone, and a way back in at
 * the back of the line. No script; the busy page's style.
 */
import { BUSY_PAGE_STYLE } from './busy.js'
import { inlineHashes, pageCsp } from './csp.js'
import { ENGLISH, type PageLanguage } from './language.js'

/** The query of the waiting page's "Leave the line" form (a POST to the page's own address). */
export const LEAVE_QUERY = '?__airlock=leave'

/** The left page's policy: its style by hash, nothing else. */
export const LEFT_PAGE_CSP = pageCsp(inlineHashes('', BUSY_PAGE_STYLE), '')

/** The page after leaving, linking back to `path` (the page the visitor waited for). */
export function renderLeftPage(path: string, l: PageLanguage = ENGLISH): string {
  const back = path.replace(/[^A-Za-z0-9/._~%!$&()*+,;=:@-]/g, encodeURIComponent).replace(/'/g, '%27')
  return (
    `<!doctype html><html${l.htmlAttributes}><head><meta charset="utf-8">` +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">' +
    `<title>${l.html('leftTitle')}</title><style>${BUSY_PAGE_STYLE}</style></head><body><main>` +
    `<h1>${l.html('leftTitle')}</h1><p>${l.html('leftText')}</p>` +
    `<p><a href='${back}'>${l.html('joinAgain')}</a></p></main></body></html>`
  )
}

/** The JSON answer for API clients. */
export const LEFT_JSON = '{"status":"left"}'
