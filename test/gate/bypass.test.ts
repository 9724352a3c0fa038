import { describe, expect, it } from 'vitest'
import { PathMatcher, pathOf, pathReadings } from '../../src/gate/bypass.js'

describe('pathOf', () => {
  it('drops the query and fragment', () => {
    expect(pathOf('/a/b?c=d#e')).toBe('/a/b')
    expect(pathOf('/a#x?y')).toBe('/a')
    expect(pathOf('/')).toBe('/')
  })
})

describe('pathReadings: every way a router may read a path', () => {
  it.each([
    ['/static/app.css', ['/static/app.css']],
    ['/a/b?x=/../y', ['/a/b']],
    ['/admin/', ['/admin/', '/admin']],
    ['//admin', ['//admin', '/admin']],
    ['/%61dmin', ['/%61dmin', '/admin']],
    ['/x/../admin', ['/x/../admin', '/admin']],
    ['/x/%2e%2e/admin', ['/x/%2e%2e/admin', '/x/../admin', '/admin']],
    ['/x\\..\\admin', ['/x\\..\\admin', '/admin']],
    ['/../../admin', ['/../../admin', '/admin']],
    ['/a/./b/.', ['/a/./b/.', '/a/b/', '/a/b']],
    ['/admin%3B.css', ['/admin%3B.css', '/admin;.css', '/admin']],
    ['/bad%zz/..%2fadmin', ['/bad%zz/..%2fadmin', '/bad%zz/../admin', '/admin']],
    // A `;` is an ordinary character to nginx, PHP and WHATWG (`static;` a segment `..` removes), a
    // delimiter to Fastify's useSemicolonDelimiter, a segment's parameters to Tomcat (issue 38).
    ['/admin;.css', ['/admin;.css', '/admin']],
    ['/app.css;v=2?x=1', ['/app.css;v=2', '/app.css']],
    ['/a/b?c=;d', ['/a/b']],
    ['/static;/../admin', ['/static;/../admin', '/admin', '/static', '/static/../admin']],
    ['/static/x;/../../admin', ['/static/x;/../../admin', '/admin', '/static/x', '/static/x/../../admin']],
    ['/static/..;/admin', ['/static/..;/admin', '/static/..', '/static/../admin', '/', '/admin']],
  ])('%s → %j', (url, readings) => {
    expect(pathReadings(url)).toEqual(readings)
  })

  it('adds the static route the framework chose, and lower case when the router folds case', () => {
    expect(pathReadings('/Admin', { route: '/admin' })).toEqual(['/Admin', '/admin'])
    expect(pathReadings('/users/1', { route: '/users/:id' })).toEqual(['/users/1'])
    expect(pathReadings('/ADMIN/', { foldCase: true })).toEqual(['/ADMIN/', '/ADMIN', '/admin/', '/admin'])
  })
})

describe('PathMatcher.bypasses: only when every reading is a bypassed path', () => {
  it('a path too odd to read every way is gated', () => {
    // Each decoding peels one layer: seventy layers make seventy readings.
    const odd = `/static/%${'25'.repeat(70)}2e`
    expect(pathReadings(odd)).toBeUndefined()
    expect(new PathMatcher(['/static']).bypasses(odd)).toBe(false)
  })

  const m = new PathMatcher(['/static', '/API/health', /^\/(?!admin)/, /\.css$/])

  it('lets through what the rules mean', () => {
    for (const url of ['/static', '/static/', '/static/a.js', '/about', '/app.css', '/app.css;v=2', '/API/health'])
      expect(m.bypasses(url), url).toBe(true)
  })

  it('gates every spelling of a gated path', () => {
    for (const url of [
      '/admin',
      '/admin;.css',
      '/%61dmin',
      '/x/../admin',
      '//admin',
      '/x/..%2fadmin',
      '/static;/../admin',
      '/static;x/../admin',
      '/static;/%2e%2e/admin',
      '/static/x;/../../admin',
    ])
      expect(m.bypasses(url), url).toBe(false)
    expect(m.bypasses('/ADMIN'), 'a case-sensitive router does not serve /ADMIN as /admin').toBe(true)
    expect(m.bypasses('/ADMIN', { foldCase: true })).toBe(false)
    expect(m.bypasses('/Admin', { route: '/admin' })).toBe(false)
  })

  it('with foldCase, path rules compare without case, as the router does', () => {
    const paths = new PathMatcher(['/static', '/API/health'])
    expect(paths.bypasses('/api/HEALTH', { foldCase: true })).toBe(true)
    expect(paths.bypasses('/api/HEALTH')).toBe(false)
    expect(paths.bypasses('/STATIC/x.js', { foldCase: true })).toBe(true)
    expect(
      new PathMatcher([/^\/Static\//]).bypasses('/Static/x.js', { foldCase: true }),
      'a pattern is tested as written on the lower-cased reading too',
    ).toBe(false)
  })
})
