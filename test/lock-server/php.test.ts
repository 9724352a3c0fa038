/**
 * A real PHP client against the lock service, over real HTTP: php-cli with Debian's Symfony
 * HttpClient (php-cli php-curl php-symfony-http-client; `.ci/run` installs them, so in CI this runs).
 *
 * - `replay-client.php` replays the Small Resource Server PHP client's protocol (written here, not
 *   that client's code) through its quick start.
 * - `real-client.php` runs that client's own classes, unchanged, when SRS_CLIENT_DIR points at its
 *   src/ directory (its code is not part of this repository and cannot be installed here:
 *   Packagist is out of reach), so it is skipped unless you provide it.
 */
import { execFile, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryStore } from '../../src/stores/memory.js'
import { redisStore } from '../../src/stores/redis.js'
import type { Store } from '../../src/stores/types.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { KEYS, startService, uniqueName, type Service } from './harness.js'

requireRedis()
const php = spawnSync(
  'php',
  [
    '-r',
    'require "/usr/share/php/Symfony/Component/HttpClient/autoload.php"; echo extension_loaded("curl") ? "ok" : "no curl";',
  ],
  { encoding: 'utf8' },
)
const phpReady = php.status === 0 && php.stdout === 'ok'
if (!phpReady && process.env.CI) {
  throw new Error(
    `CI=true but php-cli with curl and Symfony's HttpClient is missing (${php.stderr || php.stdout}): apt-get install php-cli php-curl php-symfony-http-client`,
  )
}
const realClient = process.env.SRS_CLIENT_DIR
const script = (name: string) => fileURLToPath(new URL(`./php/${name}`, import.meta.url))

const QUICK_START = {
  aLocked: true,
  aData: null,
  bLocked: false,
  bWaited: true,
  aWrote: true,
  aUnlocked: true,
  bData: { qty: 5 },
  bUnlocked: true,
  cLocked: true,
  cUnlocked: true,
}

describe.skipIf(!phpReady)('a PHP client of the lock service', () => {
  let redis: PrivateRedis | undefined
  const stores: Record<string, () => Store> = { memory: () => memoryStore() }
  beforeAll(async () => {
    if (redisAvailable) {
      redis = await startRedis()
      stores.redis = () => redisStore({ client: redis!.client() })
    }
  })
  afterAll(async () => {
    await redis?.stop()
  })

  const run = async (file: string, svc: Service, name: string) => {
    const { stdout } = await promisify(execFile)('php', [script(file), svc.url, KEYS.write, name], {
      timeout: 30_000,
      env: { ...process.env },
    })
    return JSON.parse(stdout.trim())
  }

  for (const label of ['memory', 'redis']) {
    it(`replays the Small Resource Server client's quick start on ${label}`, async () => {
      if (!stores[label]) return expect(label).toBe('redis') // Redis missing outside CI (requireRedis fails in CI)
      const store = stores[label]!()
      const svc = await startService({ store, dataFormat: undefined })
      try {
        expect(await run('replay-client.php', svc, uniqueName(`php-${label}`))).toEqual(QUICK_START)
      } finally {
        await svc.close()
        await store.close()
      }
    }, 60_000)
  }

  it.skipIf(!realClient)(
    'runs the real Small Resource Server client (SRS_CLIENT_DIR) through its quick start, unchanged',
    async () => {
      const store = memoryStore()
      const svc = await startService({ store, dataFormat: undefined })
      try {
        expect(await run('real-client.php', svc, uniqueName('php-real'))).toEqual(QUICK_START)
      } finally {
        await svc.close()
      }
    },
    60_000,
  )
})
