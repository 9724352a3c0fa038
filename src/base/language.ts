/**
 * `Accept-Language` negotiation (RFC 9110 section 12.5.4, RFC 4647 "lookup"): the visitor's
 * ranges by quality, each looked up in a catalogue, then without its last subtag (`de-AT-1996`,
 * `de-AT`, `de`). No dependencies. The header is the client's: the parse is bounded (its first
 * {@link MAX_LANGUAGE_HEADER} characters, {@link MAX_LANGUAGE_RANGES} ranges) and a malformed
 * range is skipped, never an error.
 */

/** Characters of an `Accept-Language` header looked at (the rest is ignored). */
export const MAX_LANGUAGE_HEADER = 1024
/** Ranges of an `Accept-Language` header looked at. */
export const MAX_LANGUAGE_RANGES = 24

/** A language range as a client may send it: `de`, `de-AT`, `zh-Hans-CN`, `*`. */
const RANGE = /^(?:\*|[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8}){0,7})$/
/** A quality value: 0 to 1 with at most three decimals. */
const QUALITY = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/

/**
 * A catalogue tag the package accepts for its pages: a language (2 or 3 letters), an optional
 * script (4 letters) and an optional region (2 letters or 3 digits): `de`, `pt-BR`, `zh-Hant`,
 * `es-419`. (BCP 47 allows more; pages need no more.)
 */
export const LANGUAGE_TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?$/

/** `tag` in its canonical case (`pt-br` → `pt-BR`), or `undefined` when it is no {@link LANGUAGE_TAG}. */
export function canonicalTag(tag: string): string | undefined {
  if (!LANGUAGE_TAG.test(tag)) return undefined
  try {
    return Intl.getCanonicalLocales(tag)[0]
  } catch {
    return undefined
  }
}

/** True when the script of `tag`'s language runs right to left (Arabic, Hebrew, Persian, Urdu, ...). */
export function rightToLeft(tag: string): boolean {
  try {
    const locale = new Intl.Locale(tag) as Intl.Locale & {
      textInfo?: { direction?: string }
      getTextInfo?: () => { direction?: string }
    }
    return (locale.getTextInfo?.() ?? locale.textInfo)?.direction === 'rtl'
  } catch {
    return false
  }
}

interface Range {
  /** Lower case. */
  tag: string
  q: number
  /** Position in the header: ties keep the client's order. */
  at: number
}

/** The well-formed ranges of a header, best first (quality, then the client's order); `q=0` ones last. */
function ranges(header: string): Range[] {
  const text = header.length > MAX_LANGUAGE_HEADER ? header.slice(0, MAX_LANGUAGE_HEADER) : header
  const found: Range[] = []
  const parts = text.split(',', MAX_LANGUAGE_RANGES)
  for (let i = 0; i < parts.length; i++) {
    const [range = '', ...params] = parts[i]!.split(';')
    const tag = range.trim()
    if (!RANGE.test(tag)) continue
    let q = 1
    let ok = true
    for (const p of params) {
      const eq = p.indexOf('=')
      if (p.slice(0, eq).trim().toLowerCase() !== 'q') continue
      const v = p.slice(eq + 1).trim()
      if (eq < 0 || !QUALITY.test(v)) ok = false
      else q = Number(v)
    }
    if (ok) found.push({ tag: tag.toLowerCase(), q, at: i })
  }
  return found.sort((a, b) => b.q - a.q || a.at - b.at)
}

/**
 * The best language of `header` that `lookup` knows (it is given lower-case tags: `de-at`, then
 * `de`), or `fallback`. `*` stands for `fallback`, or, when the client refused that (`en;q=0`),
 * the first of `others` it did not refuse. A language the client refused (`q=0`) is never chosen
 * through a longer or a shorter tag of another range.
 */
export function negotiateLanguage<T>(
  header: string | string[] | undefined,
  lookup: (lowerCaseTag: string) => T | undefined,
  fallback: { tag: string; value: T },
  others: readonly string[] = [],
): T {
  const text = Array.isArray(header) ? header.join(',') : header
  if (!text) return fallback.value
  const list = ranges(text)
  const refused = new Set(list.filter((r) => r.q === 0).map((r) => r.tag))
  for (const r of list) {
    if (r.q === 0) break
    if (r.tag === '*') {
      if (!refused.has(fallback.tag)) return fallback.value
      for (const tag of others) {
        const found = refused.has(tag.toLowerCase()) ? undefined : lookup(tag.toLowerCase())
        if (found !== undefined) return found
      }
      continue
    }
    for (let tag = r.tag; tag !== ''; tag = tag.slice(0, Math.max(0, tag.lastIndexOf('-')))) {
      if (refused.has(tag)) break
      const found = lookup(tag)
      if (found !== undefined) return found
    }
  }
  return fallback.value
}
