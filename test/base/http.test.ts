import { describe, expect, it } from 'vitest'
import { cookieValues, firstCookie, prefersJson } from '../../src/base/http.js'

describe('cookies', () => {
  it('finds exactly the named cookie', () => {
    const h = 'xairlock_pass=no; airlock_pass=yes; airlock_pass_checkout=c; other=1'
    expect(firstCookie(h, 'airlock_pass')).toBe('yes')
    expect(firstCookie(h, 'airlock_pass_checkout')).toBe('c')
    expect(firstCookie('airlock_pass=first', 'airlock_pass')).toBe('first')
    expect(firstCookie('a=1;airlock_pass="quoted"', 'airlock_pass')).toBe('quoted')
    expect(firstCookie('a=1', 'airlock_pass')).toBeUndefined()
    expect(firstCookie(undefined, 'airlock_pass')).toBeUndefined()
    expect(firstCookie('airlock_pass=', 'airlock_pass')).toBe('')
    expect(cookieValues('airlock_pass=1; airlock_pass=2;airlock_pass=3', 'airlock_pass')).toEqual(['1', '2', '3'])
    expect(cookieValues(['a=1', 'airlock_pass=2'], 'airlock_pass')).toEqual(['2'])
    expect(cookieValues(Array.from({ length: 20 }, (_, i) => `p=${i}`).join('; '), 'p', 4)).toEqual([
      '0',
      '1',
      '2',
      '3',
    ])
    // Each value once: repeating a value costs nothing more.
    expect(cookieValues(`${'p=1; '.repeat(20)}p=2`, 'p')).toEqual(['1', '2'])
  })
})

describe('content negotiation', () => {
  it.each([
    ['application/json', true],
    ['application/problem+json', true],
    ['application/json, */*', true],
    ['application/json, text/html;q=0.5', true],
    ['text/html,application/json;q=0.9', false],
    ['text/html, application/json', false],
    ['*/*', false],
    ['', false],
    [undefined, false],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', false],
    ['application/json;q=0', false],
    // JSON is not named, but HTML is refused (q=0 or not listed) and JSON is acceptable.
    ['text/html;q=0, */*', true],
    ['text/html;q=0,*/*;q=0.1', true],
    ['text/html;q=0.5, */*', true],
    ['application/*', true],
    ['text/*;q=0.2, application/*', true],
    ['Application/JSON', true],
    // HTML acceptable and not ranked below JSON: the page.
    ['text/html;q=0.5, */*;q=0.5', false],
    ['text/html, */*', false],
    ['text/*, application/*', false],
    ['image/png', false],
    ['text/plain', false],
    // Every browser's navigation header (Chrome/Edge, Firefox, Safari, old Firefox).
    [
      'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7',
      false,
    ],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', false],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,image/webp,*/*;q=0.8', false],
    ['text/html', false],
  ])('Accept %j prefers JSON: %s', (accept, json) => {
    expect(prefersJson(accept)).toBe(json)
  })
})

describe('varyWith', () => {
  it("joins the gate's Vary to the application's: each name once, case-insensitively; * stays", async () => {
    const { varyWith } = await import('../../src/base/http.js')
    expect(varyWith(undefined, 'Accept, Accept-Language')).toBe('Accept, Accept-Language')
    expect(varyWith('Origin', 'Accept, Accept-Language')).toBe('Origin, Accept, Accept-Language')
    expect(varyWith('accept, Origin', 'Accept, Accept-Language')).toBe('accept, Origin, Accept-Language')
    expect(varyWith(['Origin', 'Cookie'], 'Accept')).toBe('Origin, Cookie, Accept')
    expect(varyWith('*', 'Accept')).toBe('*')
  })
})
