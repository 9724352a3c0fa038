/**
 * Express (4 or 5) behind the Hug Shield gate.
 *   In your app (npm install airlock-shield express ioredis tsx):
 *     npx tsx node_modules/airlock-shield/examples/express.ts
 *   In a clone of the repository: npx tsx examples/express.ts
 * With REDIS_URL set (and AIRLOCK_SECRET), slots and passes are shared by every instance.
 */
import express from 'express'
import { Redis } from 'ioredis'
import { airlock } from 'airlock-shield/express'
import { memoryStore } from 'airlock-shield'
import { redisStore } from 'airlock-shield/redis'

const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) : undefined
const store = redis ? redisStore({ client: redis }) : memoryStore()
const app = express()

app.get('/health', (_req, res) => {
  res.send('ok') // declared before the gate: never gated
})

// Checkout gets its own, smaller gate, mounted on its router.
const checkout = express.Router()
checkout.use(airlock({ name: 'checkout', limit: 5, store, secret: process.env.AIRLOCK_SECRET }))
checkout.get('/', (_req, res) => {
  res.send('checkout')
})
app.use('/checkout', checkout)

app.use(airlock({ limit: 20, store, secret: process.env.AIRLOCK_SECRET, bypass: ['/static'] }))
app.get('/', (_req, res) => {
  res.json({ hello: 'world' })
})
app.post('/logout', async (_req, res) => {
  res.json({ released: await res.locals.airlock?.release() })
})

const port = Number(process.env.PORT ?? 3000)
const server = app.listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}`))
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close(() => {
      redis?.disconnect()
      process.exit(0)
    })
    server.closeAllConnections()
  })
}
