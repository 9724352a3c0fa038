import { describe, expect, it } from 'vitest'
import { canonicalTag, MAX_LANGUAGE_HEADER, negotiateLanguage, rightToLeft } from '../../src/base/language.js'

const CATALOGUE = new Set(['en', 'de', 'fr', 'pt', 'pt-br', 'zh', 'ar'])
const pick = (header: string | string[] | undefined): string =>
  negotiateLanguage(header, (tag) => (CATALOGUE.has(tag) ? tag : undefined), { tag: 'en', value: 'en' }, [
    'en',
    'de',
    'fr',
    'pt',
    'zh',
    'ar',
  ])

describe('Accept-Language negotiation', () => {
  it('no header, an empty one, or nothing known: the fallback', () => {
    expect(pick(undefined)).toBe('en')
    expect(pick('')).toBe('en')
    expect(pick('xx')).toBe('en')
    expect(pick('xx, yy;q=0.5')).toBe('en')
  })

  it('follows q-values, and the client order among equal ones', () => {
    expect(pick('de')).toBe('de')
    expect(pick('fr;q=0.5, de;q=0.8')).toBe('de')
    expect(pick('fr, de')).toBe('fr')
    expect(pick('xx;q=1, fr;q=0.1')).toBe('fr')
    expect(pick('de;q=0.3, fr;q=0.30')).toBe('de')
    expect(pick('fr;q=0.001, de;q=0')).toBe('fr')
  })

  it('falls back from a region (or script) to the language: de-AT → de; an exact region first', () => {
    expect(pick('de-AT')).toBe('de')
    expect(pick('DE-at')).toBe('de')
    expect(pick('zh-Hans-CN')).toBe('zh')
    expect(pick('pt-BR')).toBe('pt-br')
    expect(pick('pt-PT')).toBe('pt')
    expect(pick('de-AT, fr;q=0.9')).toBe('de')
  })

  it('`*` is the fallback, unless the client refused it; a refused language is never chosen', () => {
    expect(pick('*')).toBe('en')
    expect(pick('xx, *;q=0.5')).toBe('en')
    expect(pick('en;q=0, *')).toBe('de')
    expect(pick('en;q=0, de;q=0, *')).toBe('fr')
    expect(pick('de-AT, de;q=0')).toBe('en')
    expect(pick('de;q=0')).toBe('en')
  })

  it('skips malformed ranges and qualities instead of failing', () => {
    expect(pick('de;q=2, fr')).toBe('fr')
    expect(pick('de;q=abc, fr')).toBe('fr')
    expect(pick('de;q=0.1234, fr;q=0.5')).toBe('fr')
    expect(pick('d e, fr')).toBe('fr')
    expect(pick('<script>, de')).toBe('de')
    expect(pick('de_AT, fr')).toBe('fr')
    expect(pick('toolongtag-de, de;q=0.1')).toBe('de')
    expect(pick(',,;;,=, ,de')).toBe('de')
    expect(pick('de;level=1;q=0.5, fr;q=0.4')).toBe('de')
    expect(pick(['xx', 'de'])).toBe('de')
  })

  it('bounds the work on long headers: only the first ranges and characters count', () => {
    const long = `${'xx, '.repeat(50)}de`
    expect(pick(long)).toBe('en')
    const huge = `de;q=0.1, ${'a'.repeat(100_000)}`
    const t0 = performance.now()
    expect(pick(huge)).toBe('de')
    expect(pick(`${'x'.repeat(MAX_LANGUAGE_HEADER)}, de`)).toBe('en')
    expect(pick(`${'de-AT-'.repeat(20_000)}x`)).toBe('en')
    expect(performance.now() - t0).toBeLessThan(100)
  })

  it('canonical tags and direction', () => {
    expect(canonicalTag('pt-br')).toBe('pt-BR')
    expect(canonicalTag('ZH-hant')).toBe('zh-Hant')
    expect(canonicalTag('es-419')).toBe('es-419')
    expect(canonicalTag('de_DE')).toBeUndefined()
    expect(canonicalTag('english')).toBeUndefined()
    expect(canonicalTag('x')).toBeUndefined()
    expect(rightToLeft('ar')).toBe(true)
    expect(rightToLeft('he')).toBe(true)
    expect(rightToLeft('fa')).toBe(true)
    expect(rightToLeft('de')).toBe(false)
    expect(rightToLeft('ja')).toBe(false)
  })
})
