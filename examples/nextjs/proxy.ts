/**
 * Next.js 16 behind the gate: `proxy.ts` (formerly middleware.ts) runs on Node.js before every
 * route, and the gate (session mode) decides there. With REDIS_URL set (and AIRLOCK_SECRET), slots
 * and passes are shared by every instance of the site, as they must be when Next runs on several.
 *   In a clone of the repository: npx next dev --webpack examples/nextjs   (AIRLOCK_LIMIT: the limit, 20)
 *   In your Next app (npm install airlock-shield ioredis): copy this file beside your app/ folder.
 * Session mode only: a proxy runs before the route and never sees its response end, so it cannot
 * hold a request-mode slot for as long as the route works.
 */
// `next/server` in an app with Next's tsconfig; `.js` here, where tsc resolves as Node does (NodeNext).
import { NextResponse, type NextRequest } from 'next/server.js'
import { Redis } from 'ioredis'
import { memoryStore } from 'airlock-shield'
import { airlock } from 'airlock-shield/fetch'
import { redisStore } from 'airlock-shield/redis'

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) : undefined
const shield = airlock({
  limit: Number(process.env.AIRLOCK_LIMIT ?? 20),
  store: redis ? redisStore({ client: redis }) : memoryStore(),
  secret: process.env.AIRLOCK_SECRET, // 32+ bytes; required in production with Redis
  bypass: ['/health'],
  // Next's server sets X-Forwarded-For to the socket's address when the request has none; a proxy
  // in front appends the address it saw: the last entry (a client can write the header itself).
  clientAddress: (request) => request.headers.get('x-forwarded-for')?.split(',').at(-1)?.trim(),
})

/** The gate's answer (busy, waiting, the confirm request), or the route with the pass's headers. */
export async function proxy(request: NextRequest): Promise<Response> {
  const answer = await shield.check(request)
  return answer.response ?? NextResponse.next({ headers: answer.headers })
}

// Next's own files (scripts, images) are not gated: a visitor let in loads the page whole.
export const config = {
  matcher: ['/((?!_next/static|_next/image|favicon.ico).*)'],
}
