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
import { createGate, memoryStore, type GateDecision, type RequestView } from 'airlock-shield'
import { redisStore } from 'airlock-shield/redis'

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) : undefined
const gate = createGate<NextRequest>({
  limit: Number(process.env.AIRLOCK_LIMIT ?? 20),
  store: redis ? redisStore({ client: redis }) : memoryStore(),
  secret: process.env.AIRLOCK_SECRET, // 32+ bytes; required in production with Redis
  bypass: ['/health'],
})

// TODO(issue 29, lead): once `airlock-shield/fetch` is merged, `view` and `answer` below become its
// middleware call: a Response to send (busy, waiting, confirm), or else the headers a let-in
// visitor's response must carry (the new pass's Set-Cookie, the confirm Link) for
// NextResponse.next({ headers }). A bare `undefined` would lose them (docs/stacks.md, Next.js).

/** What the gate reads of a Next request. */
function view(request: NextRequest): RequestView<NextRequest> {
  const headers = Object.fromEntries(request.headers)
  return {
    method: request.method,
    url: request.nextUrl.pathname + request.nextUrl.search,
    headers,
    secure: request.nextUrl.protocol === 'https:',
    // Next's server sets X-Forwarded-For to the socket's address when the request has none; a proxy
    // in front appends the address it saw: the last entry (a client can write the header itself).
    ip: headers['x-forwarded-for']?.split(',').at(-1)?.trim(),
    request,
  }
}

/** The gate's answer (busy, waiting, the confirm request), or the route with the pass's headers. */
function answer(d: GateDecision): Response {
  const headers = new Headers()
  if (d.setCookie !== undefined) headers.append('set-cookie', d.setCookie)
  if (d.response !== undefined) {
    for (const [k, v] of Object.entries(d.response.headers)) headers.set(k, v)
    // A 204 (the pass's confirm request) has no body: a Response refuses one, even ''.
    return new Response(d.response.status === 204 ? null : d.response.body, { status: d.response.status, headers })
  }
  if (d.kind === 'admit' && d.headers !== undefined) for (const [k, v] of Object.entries(d.headers)) headers.append(k, v)
  return NextResponse.next({ headers })
}

export async function proxy(request: NextRequest): Promise<Response> {
  return answer(await gate.decide(view(request)))
}

// Next's own files (scripts, images) are not gated: a visitor let in loads the page whole.
export const config = {
  matcher: ['/((?!_next/static|_next/image|favicon.ico).*)'],
}
