import { createRequire } from 'node:module'
import { AirlockError } from './errors.js'

/** Optional peer dependencies, loaded only by the features that need them. */
export type Peer = 'ioredis' | 'redis' | 'fastify' | 'undici' | 'prom-client'

const requireHere = createRequire(import.meta.url)

/**
 * Loads an optional peer dependency at the moment a feature needs it, so that users who never use
 * the feature never install it (the memory store needs no ioredis; the semaphore needs no Fastify).
 *
 * @param feature What needs it, for the message: `'createLockServer()'`, `'--redis'`.
 * @throws `ERR_AIRLOCK_PEER_MISSING` with a one-line fix (`npm install ioredis`) when it is absent.
 */
export function loadPeer<T>(name: Peer, feature: string): T {
  try {
    return requireHere(name) as T
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    if (e?.code === 'MODULE_NOT_FOUND' && String(e.message).includes(`'${name}'`)) {
      throw new AirlockError(
        'ERR_AIRLOCK_PEER_MISSING',
        `${feature} needs the optional dependency ${name}, which is not installed: npm install ${name}`,
        { cause: err },
      )
    }
    throw err
  }
}

/** True when the optional peer `name` can be loaded. */
function present(name: Peer): boolean {
  try {
    requireHere.resolve(name)
    return true
  } catch {
    return false
  }
}

/**
 * Checks that every peer `feature` needs is installed before loading any: one
 * `ERR_AIRLOCK_PEER_MISSING` naming all the missing ones and one install command, rather than one
 * at a time.
 */
export function assertPeers(names: readonly Peer[], feature: string): void {
  const missing = names.filter((n) => !present(n))
  if (missing.length <= 1) return // one missing: loadPeer says it, with Node's error as the cause
  throw new AirlockError(
    'ERR_AIRLOCK_PEER_MISSING',
    `${feature} needs the optional dependencies ${missing.slice(0, -1).join(', ')} and ${missing.at(-1)}, which are not installed: npm install ${missing.join(' ')}`,
  )
}
