/** Small HTTP helpers for the gate: cookies, content negotiation, paths. No dependencies. */

/**
 * Most values of one cookie name looked at in a request. A browser sends several when cookies of
 * the same name exist on several paths or domains (more specific paths first, older first), so a
 * genuine pass may follow stale ones, or ones a sibling subdomain planted to hide it (issue 38:
 * 32 of them did). 256 is more than a request within Node's 16 KB header limit can carry of values
 * as long as a pass; each costs at most one HMAC check, after cheap checks of its shape.
 */
export const MAX_COOKIE_VALUES = 256

/**
 * Values of the cookie `name` in a `Cookie` header, in order (a browser sends several when cookies of
 * the same name exist on several paths), each once, at most `max`. Surrounding double quotes are removed.
 */
export function cookieValues(header: string | string[] | undefined, name: string, max = MAX_COOKIE_VALUES): string[] {
  const text = Array.isArray(header) ? header.join('; ') : header
  const found: string[] = []
  if (!text) return found
  const key = `${name}=`
  let from = 0
  while (found.length < max) {
    const at = text.indexOf(key, from)
    if (at < 0) break
    from = at + key.length
    if (!startsCookie(text, at)) continue
    let end = text.indexOf(';', from)
    if (end < 0) end = text.length
    let value = text.slice(from, end).trim()
    if (value.length >= 2 && value.charCodeAt(0) === 34 && value.charCodeAt(value.length - 1) === 34) {
      value = value.slice(1, -1)
    }
    if (!found.includes(value)) found.push(value)
    from = end
  }
  return found
}

/** The first value of cookie `name`, or `undefined` (the hot path: no array; `key`, `name=`, made once by a caller that asks often). */
export function firstCookie(header: string | string[] | undefined, name: string, key = `${name}=`): string | undefined {
  if (typeof header !== 'string') return cookieValues(header, name, 1)[0]
  let at = header.indexOf(key)
  while (at >= 0 && !startsCookie(header, at)) at = header.indexOf(key, at + 1)
  if (at < 0) return undefined
  const from = at + key.length
  let end = header.indexOf(';', from)
  if (end < 0) end = header.length
  let value = header.slice(from, end)
  if (value.charCodeAt(value.length - 1) === 32 || value.charCodeAt(0) === 32) value = value.trim()
  if (value.length >= 2 && value.charCodeAt(0) === 34 && value.charCodeAt(value.length - 1) === 34) {
    value = value.slice(1, -1)
  }
  return value
}

/** True when the cookie name found at `at` starts a cookie (start of header, or after `;` and spaces). */
function startsCookie(text: string, at: number): boolean {
  let i = at - 1
  while (i >= 0 && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 9)) i--
  return i < 0 || text.charCodeAt(i) === 59
}

export interface CookieAttributes {
  path: string
  domain: string | undefined
  httpOnly: boolean
  sameSite: 'lax' | 'strict' | 'none'
}

/** `; Path=/; HttpOnly; SameSite=Lax` etc., without Max-Age and Secure. */
export function cookieAttributes(a: CookieAttributes): string {
  let s = `; Path=${a.path}`
  if (a.domain) s += `; Domain=${a.domain}`
  if (a.httpOnly) s += '; HttpOnly'
  s += `; SameSite=${a.sameSite === 'lax' ? 'Lax' : a.sameSite === 'strict' ? 'Strict' : 'None'}`
  return s
}

interface MediaRange {
  type: string
  subtype: string
  q: number
}

function parseAccept(accept: string): MediaRange[] {
  const ranges: MediaRange[] = []
  for (const part of accept.split(',', 32)) {
    const [media, ...params] = part.split(';')
    const [type, subtype] = (media ?? '').trim().toLowerCase().split('/')
    if (!type || !subtype) continue
    let q = 1
    for (const p of params) {
      const [k, v] = p.split('=')
      if (k?.trim().toLowerCase() === 'q') {
        const n = Number(v?.trim())
        q = Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0
      }
    }
    ranges.push({ type, subtype, q })
  }
  return ranges
}

/** Quality and specificity (2 exact, 1 type/*, 0 star/star) of the best range matching type/subtype. */
function match(ranges: MediaRange[], type: string, subtype: string): [number, number] {
  let best: [number, number] = [0, -1]
  for (const r of ranges) {
    let spec: number
    if (r.type === type && (r.subtype === subtype || (subtype === 'json' && r.subtype.endsWith('+json')))) spec = 2
    else if (r.type === type && r.subtype === '*') spec = 1
    else if (r.type === '*' && r.subtype === '*') spec = 0
    else continue
    if (spec > best[1]) best = [r.q, spec]
  }
  return best
}

/**
 * True when the client prefers JSON to HTML: `application/json` (or `+json`) with a higher quality
 * than `text/html`, or as high but named more precisely (`application/json, *\/*`). JSON need not be
 * named: `text/html;q=0, *\/*` (HTML refused) and `application/*` prefer it too, and a client
 * that refused HTML gets JSON whatever else its header says (`text/html;q=0,,,`). A missing header,
 * `*\/*`, and every browser's navigation header get HTML.
 */
export function prefersJson(accept: string | string[] | undefined): boolean {
  const text = Array.isArray(accept) ? accept.join(',') : accept
  if (!text) return false
  // Fast path, taken by every browser's navigation header: a bare `text/html` first has quality 1
  // and the most precise match, which JSON cannot beat.
  if (text.startsWith('text/html') && (text.length === 9 || text.charCodeAt(9) === 44)) return false
  const ranges = parseAccept(text)
  const [qJson, sJson] = match(ranges, 'application', 'json')
  const [qHtml, sHtml] = match(ranges, 'text', 'html')
  // A client that refused HTML (`text/html;q=0`, `text/*;q=0`) never gets it, however it names the rest.
  if (qHtml <= 0 && sHtml >= 0) return true
  if (qJson <= 0) return false
  return qJson > qHtml || (qJson === qHtml && sJson > sHtml)
}

/**
 * True when a client that prefers JSON ({@link prefersJson}) names `application/problem+json` with
 * a quality above 0 and at least that of plain `application/json`: it gets RFC 9457 problem details.
 */
export function asksProblem(accept: string | string[] | undefined): boolean {
  const text = Array.isArray(accept) ? accept.join(',') : accept
  if (!text?.includes('problem+json')) return false
  let problem = 0
  let json = 0
  for (const r of parseAccept(text)) {
    if (r.type !== 'application') continue
    if (r.subtype === 'problem+json') problem = Math.max(problem, r.q)
    else if (r.subtype === 'json') json = Math.max(json, r.q)
  }
  return problem > 0 && problem >= json
}

/**
 * The answer to a `HEAD` request, from the answer its `GET` would get: the same status, headers and
 * `Content-Length` (RFC 9110, section 9.3.2). The body stays: Node's `http` never sends a body in
 * answer to `HEAD`, and Fastify sizes the answer of the `HEAD` route it derives from a `GET` route
 * by the body it is given (an empty one would say `Content-Length: 0`).
 */
export function headAnswer<T extends { headers: Readonly<Record<string, string>>; body: string }>(get: T): T {
  return { ...get, headers: { ...get.headers, 'content-length': String(Buffer.byteLength(get.body)) } }
}

/**
 * A `Vary` value with `add`'s header names joined to those `existing` (a value set earlier by the
 * application, e.g. `Origin`) already names: each name once, case-insensitively; `*` stays `*`.
 */
export function varyWith(existing: unknown, add: string): string {
  const before = Array.isArray(existing) ? existing.join(', ') : typeof existing === 'string' ? existing : ''
  if (before.trim() === '') return add
  const names = before
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '')
  if (names.includes('*')) return '*'
  const seen = new Set(names.map((n) => n.toLowerCase()))
  for (const name of add.split(',')) {
    const n = name.trim()
    if (n !== '' && !seen.has(n.toLowerCase())) {
      seen.add(n.toLowerCase())
      names.push(n)
    }
  }
  return names.join(', ')
}
