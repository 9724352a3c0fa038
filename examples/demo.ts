/**
 * `npm run demo`: a tiny Fastify site on the memory store with room for only 2 visitors at once,
 * so the busy page is easy to see. Ctrl-C stops it. Only in a clone of the repository (the package
 * ships examples/fastify.ts and examples/waiting-room.ts instead).
 */
import Fastify from 'fastify'
import formbody from '@fastify/formbody'
import { airlockShield } from 'airlock-shield/fastify'
import { memoryStore } from 'airlock-shield'

const LIMIT = 2
const app = Fastify()
// The "Leave" button posts an HTML form (application/x-www-form-urlencoded). Fastify parses only
// JSON and plain text by itself and answers any other body type 415, so register the form parser
// in every Fastify app that has HTML forms (npm install @fastify/formbody).
await app.register(formbody)
await app.register(airlockShield, {
  limit: LIMIT,
  store: memoryStore(),
  retryAfter: 3,
  // Demo only: a fixed secret so passes survive restarts of the demo. Use your own 32+ byte secret.
  secret: process.env.AIRLOCK_SECRET ?? 'airlock-shield-demo-secret-not-for-production',
  bypass: ['/stats'],
  // Demo only: every curl below comes from one address, which the client share (on by default)
  // would count as one client holding its share. A real site keeps it on.
  clientShare: false,
})

app.get('/', async (_request, reply) => {
  const kind = reply.airlock.decision?.kind
  return reply
    .type('text/html')
    .send(
      `<!doctype html><meta charset="utf-8"><title>Demo shop</title><h1>Welcome in!</h1>` +
        `<p>You got in (${kind}). Only ${LIMIT} visitors fit at once; everyone else sees the busy page.</p>` +
        `<form method="post" action="/leave"><button>Leave (free my slot)</button></form>`,
    )
})
app.post('/leave', async (_request, reply) => {
  await reply.airlock.release()
  return reply.type('text/html').send('<p>Bye! Your slot is free for the next visitor.</p><a href="/">Back in</a>')
})
app.get('/stats', async () => app.airlockGate.state())

// Stop cleanly on Ctrl-C or SIGTERM (installed before the banner: whoever reads it may signal at once).
let stopping = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1)
    stopping = true
    console.log('\nstopping...')
    void app.close().then(() => process.exit(0))
  })
}

const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' })
const url = `${address}/`
console.log(`
airlock-shield demo: ${url}  (room for ${LIMIT} visitors at once)

  curl -i ${url}                                   # 1st and 2nd visitors get in (cookie: a provisional 10 s pass)
  curl -i ${url}                                   # 3rd: 503, Retry-After: 3 and the busy page
  curl -i -H 'Accept: application/json' ${url}     # the busy answer as JSON
  curl -I ${url}                                   # HEAD: headers only
  curl -s ${address}/stats                         # slots held right now

  Browser: open ${url} in two private windows, then a third one: it shows the busy page and
  gets in by itself within seconds of a slot freeing (cookie-less curl slots free after 10 s).

Ctrl-C to stop.`)
