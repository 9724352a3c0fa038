import { describe, expect, it } from 'vitest'
import { asksProblem, prefersJson } from '../../src/base/http.js'
import { busyProblem, queuedProblem } from '../../src/pages/problem.js'

describe('RFC 9457 problem details for API clients (issue 27)', () => {
  it.each([
    ['application/problem+json', true],
    ['application/problem+json, application/json;q=0.9', true],
    ['application/json, application/problem+json;q=0.5', false],
    ['application/problem+json;q=0', false],
    ['application/json', false],
    ['text/html, application/problem+json;q=0.1', false],
    ['*/*', false],
  ])('Accept %j asks for problem details: %s', (accept, problem) => {
    expect(prefersJson(accept) && asksProblem(accept)).toBe(problem)
  })

  it('a malformed Accept that refuses HTML never gets HTML', () => {
    for (const accept of [
      'text/html;q=0, */*',
      'text/html;q=0;;, application/*',
      'text/html;q=0,,,',
      'text/html;q=oops, application/json',
    ]) {
      expect(prefersJson(accept), accept).toBe(true)
    }
  })

  it('busy and queued bodies carry type, title, status, detail and the JSON answer members', () => {
    expect(JSON.parse(busyProblem(5))).toEqual({
      type: 'tag:airlock-shield,2026:busy',
      title: 'The site is busy',
      status: 503,
      detail: 'The site lets only some visitors in at once. Try again in 5 s.',
      retryAfter: 5,
      reason: 'full',
    })
    expect(JSON.parse(busyProblem(5, 'client-share'))).toMatchObject({
      type: 'tag:airlock-shield,2026:client-share',
      status: 503,
      reason: 'client-share',
      retryAfter: 5,
    })
    expect(JSON.parse(queuedProblem(452, 900, 31, 2))).toEqual({
      type: 'tag:airlock-shield,2026:queued',
      title: 'In line',
      status: 202,
      detail:
        'You are in line (place 452 of 900, about 31 s). Ask again in 2 s with the ticket cookie to keep the place.',
      retryAfter: 2,
      position: 452,
      waiting: 900,
      eta: 31,
    })
  })
})
