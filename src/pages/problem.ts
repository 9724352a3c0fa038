/**
 * RFC 9457 problem details for API clients that ask for `application/problem+json` (issue 27): the
 * busy answer (`503`) and the place in line (`202`), with the same members as the plain JSON
 * (`retryAfter`, `reason`, `position`, `waiting`, `eta`, `opensAt`) as extension members.
 */

/** The media type, with its charset. */
export const PROBLEM_TYPE = 'application/problem+json; charset=utf-8'

/** Problem type URIs: tag URIs (RFC 4151), stable names that need no server to resolve. */
const TYPE = {
  busy: 'tag:airlock-shield,2026:busy',
  'client-share': 'tag:airlock-shield,2026:client-share',
  queued: 'tag:airlock-shield,2026:queued',
} as const

/** The busy answer's problem details. */
export function busyProblem(retryAfter: number, reason = 'full'): string {
  const share = reason === 'client-share'
  return JSON.stringify({
    type: TYPE[share ? 'client-share' : 'busy'],
    title: share ? 'Too many requests from this client' : 'The site is busy',
    status: 503,
    detail: share
      ? `This client holds its share of places already. Try again in ${retryAfter} s.`
      : `The site lets only some visitors in at once. Try again in ${retryAfter} s.`,
    retryAfter,
    reason,
  })
}

/** The place in line as problem details (a `202`: not an error, but the same shape for clients that read one). */
export function queuedProblem(
  position: number | null,
  waiting: number,
  eta: number | null,
  retryAfter: number,
  opensAt: number | null = null,
): string {
  const where = position === null ? `${waiting} waiting` : `place ${position} of ${waiting}`
  return JSON.stringify({
    type: TYPE.queued,
    title: 'In line',
    status: 202,
    detail: `You are in line (${where}${eta === null ? '' : `, about ${eta} s`}). Ask again in ${retryAfter} s with the ticket cookie to keep the place.`,
    retryAfter,
    position,
    waiting,
    eta,
    ...(opensAt === null ? {} : { opensAt: new Date(opensAt).toISOString() }),
  })
}
