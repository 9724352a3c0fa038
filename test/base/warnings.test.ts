/**
 * Warnings reach the operator (issue 25): with the README's own `Fastify()` (no logger) and no
 * secret, the "no secret" warning appears on stderr once, through `process.emitWarning` with its
 * code and a link to docs/errors.md; a store that cannot be reached says so the same way.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)

async function stderrOf(code: string): Promise<string> {
  const { stderr } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: root,
    timeout: 30_000,
  })
  return stderr
}

describe('warnings on stderr, whatever the logger', () => {
  it('Fastify() without a logger and no secret: the warning appears once, with its code and its docs link', async () => {
    const stderr = await stderrOf(`
      import Fastify from 'fastify'
      import { airlockShield } from './src/fastify.ts'
      for (let i = 0; i < 2; i++) {
        const app = Fastify()
        await app.register(airlockShield, { limit: 20 })
        await app.ready()
        await app.close()
      }
    `)
    const lines = stderr.split('\n').filter((l) => l.includes('AIRLOCK_NO_SECRET'))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(
      /\[AIRLOCK_NO_SECRET\] AirlockWarning: airlock-shield: no secret given, .* \(docs\/errors\.md#airlock_no_secret\)/,
    )
  })

  it('a store that cannot be reached: the warning appears once, however many requests fail', async () => {
    const stderr = await stderrOf(`
      import Fastify from 'fastify'
      import { Redis } from 'ioredis'
      import { airlockShield } from './src/fastify.ts'
      import { redisStore } from './src/redis.ts'
      const client = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
      client.on('error', () => {})
      const app = Fastify()
      await app.register(airlockShield, { limit: 20, secret: 's'.repeat(32), store: redisStore({ client, commandTimeout: 100 }), storeTimeout: 150, onStoreError: 'open' })
      app.get('/', async () => 'ok')
      for (let i = 0; i < 3; i++) await app.inject('/')
      await app.close()
      client.disconnect()
    `)
    const lines = stderr.split('\n').filter((l) => l.includes('AIRLOCK_STORE_UNAVAILABLE'))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("the store of gate 'default' is unavailable")
  })
})
