/**
 * The `bypass` option: which requests are never gated. A rule is judged on the path the framework
 * routes, not only on the path as sent: routers and origins read one request path in several ways
 * (Fastify's `useSemicolonDelimiter`, `ignoreTrailingSlash`, `ignoreDuplicateSlashes` and
 * `caseSensitive: false`; Express's default non-strict, case-insensitive routing; percent-encoded
 * letters that find-my-way decodes; `..` segments an origin behind `airlock proxy` resolves, where
 * nginx and PHP take `static;` for an ordinary segment: `/static;/../admin` is `/admin` to them). A
 * request is let through only when **every** plausible reading of its path is a bypassed path, so a
 * path trick can only ever gate a request more, never less (issues 25 and 38).
 */
import { optionError } from '../base/errors.js'
import { received } from '../base/validate.js'
import type { RoutingRules } from './types.js'

/** The path of a request URL (without query string or fragment). */
export function pathOf(url: string): string {
  const q = url.indexOf('?')
  const h = url.indexOf('#')
  const end = q < 0 ? h : h < 0 ? q : Math.min(q, h)
  return end < 0 ? url : url.slice(0, end)
}

const cutAtSemicolon = (path: string): string => {
  const semi = path.indexOf(';')
  return semi < 0 ? path : path.slice(0, semi)
}

// Anything in a path that some router or origin reads otherwise: an escape, a `;`, a doubled or
// trailing slash, a dot segment, a backslash.
const UNUSUAL = /[%;\\]|\/\/|\/\.|.\/$/

/** More readings than this: the path is too odd to judge, and is gated. */
const MAX_READINGS = 64

/**
 * The ways an origin or a router may turn one path into another: decode escapes (once each time:
 * `%252e` is `%2e`, then `.`), resolve `..`, `.`, backslashes and doubled slashes (nginx, PHP,
 * WHATWG URL: `static;` is an ordinary segment there), cut at the first `;` (a delimiter to
 * Fastify's `useSemicolonDelimiter`), drop each segment's `;parameters` (Tomcat and Jetty:
 * `/static;x/../admin` is `/static/../admin`), drop a trailing slash (non-strict routers).
 */
const READINGS: readonly ((path: string) => string)[] = [
  (p) => decodeLoosely(p),
  (p) => removeDotSegments(p.replace(/\\/g, '/').replace(/\/{2,}/g, '/')),
  cutAtSemicolon,
  (p) => p.replace(/;[^/]*/g, ''),
  (p) => (p.length > 1 && p.endsWith('/') ? p.replace(/\/+$/, '') || '/' : p),
]

/**
 * Every way a router or an origin may read a request URL's path: the path as sent first, then
 * every path the {@link READINGS} make of it, in any order and combination (a path with nothing
 * unusual in it has only itself). `undefined` when there are more than {@link MAX_READINGS}: a
 * path that odd is judged gated.
 */
export function pathReadings(url: string, rules: RoutingRules = {}): string[] | undefined {
  const path = pathOf(url)
  const readings = [path]
  const add = (p: string): void => void (readings.includes(p) || readings.push(p))
  if (UNUSUAL.test(path)) {
    for (let i = 0; i < readings.length; i++) {
      for (const read of READINGS) add(read(readings[i]!))
      if (readings.length > MAX_READINGS) return undefined
    }
  }
  if (rules.route !== undefined && !/[:*(]/.test(rules.route)) add(rules.route)
  if (rules.foldCase) for (const p of [...readings]) add(p.toLowerCase())
  return readings
}

function decodeLoosely(path: string): string {
  try {
    return decodeURIComponent(path)
  } catch {
    // A malformed escape: decode what can be decoded, one escape at a time.
    return path.replace(/%[0-9a-f]{2}/gi, (e) => {
      try {
        return decodeURIComponent(e)
      } catch {
        return e
      }
    })
  }
}

/** RFC 3986 §5.2.4, as origins resolve `/a/../b` and `/./b`. */
function removeDotSegments(path: string): string {
  const out: string[] = []
  const parts = path.split('/')
  for (const [i, part] of parts.entries()) {
    if (part === '..') {
      if (out.length > 1) out.pop()
      if (i === parts.length - 1) out.push('')
    } else if (part === '.') {
      if (i === parts.length - 1) out.push('')
    } else out.push(part)
  }
  const joined = out.join('/')
  return joined.startsWith('/') ? joined : `/${joined}`
}

/** Paths never gated: exact paths, path prefixes (`/static/`), and patterns. */
export class PathMatcher {
  private readonly exact = new Set<string>()
  private readonly prefixes: string[] = []
  private readonly patterns: RegExp[] = []

  constructor(list: readonly unknown[]) {
    for (const [i, b] of list.entries()) {
      if (b instanceof RegExp) this.patterns.push(b)
      else if (typeof b === 'string' && b.startsWith('/')) {
        const p = b.length > 1 && b.endsWith('/') ? b.slice(0, -1) : b
        this.exact.add(p)
        this.prefixes.push(p === '/' ? '/' : `${p}/`)
      } else {
        optionError(`bypass[${i}] must be a path starting with '/' or a RegExp, got ${received(b)}`)
      }
    }
  }

  /**
   * Whether a request URL is bypassed: every reading of its path ({@link pathReadings}) matches a
   * rule. With `foldCase`, path rules (strings) compare without case, as the router does; patterns
   * are tested as written on each reading, the lower-cased ones included.
   */
  bypasses(url: string, rules?: RoutingRules): boolean {
    const fold = rules?.foldCase === true
    const readings = pathReadings(url, rules)
    if (readings === undefined) return false
    for (const path of readings) if (!this.matches(path, fold)) return false
    return true
  }

  /** Whether one path matches a rule. */
  matches(path: string, foldCase = false): boolean {
    if (foldCase) {
      const lower = path.toLowerCase()
      for (const p of this.exact) if (p.toLowerCase() === lower) return true
      for (const p of this.prefixes) if (lower.startsWith(p.toLowerCase())) return true
    } else {
      if (this.exact.has(path)) return true
      for (const p of this.prefixes) if (path.startsWith(p)) return true
    }
    for (const r of this.patterns) {
      r.lastIndex = 0
      if (r.test(path)) return true
    }
    return false
  }
}
