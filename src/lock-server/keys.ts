/**
 * API keys of the lock service: three levels, each including the ones below it
 * (READ < READ_LOCK < WRITE), checked in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { optionError } from '../base/errors.js'
import { received, knownKeys } from '../base/validate.js'

/** One key or several (several let you rotate: add the new one, move clients, remove the old one). */
export type KeyList = string | readonly string[]

/** The keys of each level. A key of a level also grants every level below it. */
export interface ApiKeys {
  /** Read data without locking (`GET ...?lock=0`, `GET /resource/:name`). */
  read?: KeyList
  /** Also lock and unlock (`GET ...?lock=1`, `POST .../unlock`). */
  readLock?: KeyList
  /** Also define and delete resources and write data (`POST /resource`, `PUT`, `DELETE`). */
  write?: KeyList
}

/** Access levels, in order: each includes the ones before it. */
export const LEVELS = { none: 0, read: 1, readLock: 2, write: 3 } as const
export type Level = (typeof LEVELS)[keyof typeof LEVELS]

/** The environment variables read when no `apiKeys` option is given (comma-separated lists). */
export const KEY_ENV = {
  read: 'AIRLOCK_READ_KEY',
  readLock: 'AIRLOCK_READ_LOCK_KEY',
  write: 'AIRLOCK_WRITE_KEY',
} as const

const KEY_FORMAT = /^[\x21-\x7e]{16,256}$/
type LevelName = keyof typeof KEY_ENV
const LEVEL_NAMES: LevelName[] = ['read', 'readLock', 'write']

const digest = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest()

/**
 * The configured keys, kept only as SHA-256 digests. `level(presented)` hashes the presented key
 * and compares it with every configured digest using `crypto.timingSafeEqual` (equal lengths by
 * construction, no early exit), so the time taken tells nothing about any key.
 */
export class KeyRing {
  private readonly entries: { digest: Buffer; level: Level }[]
  /** How many keys each level has, for a startup log line. */
  readonly counts: Record<LevelName, number>

  constructor(keys: Record<LevelName, string[]>) {
    this.entries = LEVEL_NAMES.flatMap((name) =>
      keys[name].map((key) => ({ digest: digest(key), level: LEVELS[name] })),
    )
    this.counts = { read: keys.read.length, readLock: keys.readLock.length, write: keys.write.length }
  }

  /** The highest level the presented key grants; `LEVELS.none` for a missing or unknown key. */
  level(presented: string | undefined): Level {
    if (!presented) return LEVELS.none
    const d = digest(presented)
    let level: Level = LEVELS.none
    for (const entry of this.entries) {
      if (timingSafeEqual(d, entry.digest) && entry.level > level) level = entry.level
    }
    return level
  }
}

/**
 * The keys set in the environment: `AIRLOCK_READ_KEY`, `AIRLOCK_READ_LOCK_KEY` and
 * `AIRLOCK_WRITE_KEY`, each one key or a comma-separated list. Levels left unset are absent.
 *
 * @throws `ERR_AIRLOCK_OPTION` naming the variable when a key is malformed; never echoes a key.
 */
export function apiKeysFromEnv(env: NodeJS.ProcessEnv = process.env): ApiKeys {
  const keys: ApiKeys = {}
  for (const name of LEVEL_NAMES) {
    const list = (env[KEY_ENV[name]] ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k.length > 0)
    if (list.length > 0) keys[name] = list.map((key) => checkKey(KEY_ENV[name], key))
  }
  return keys
}

/**
 * Builds the key ring from the `apiKeys` option or, when it is not given, from the environment
 * (see {@link apiKeysFromEnv}). Keys must be 16 to 256 visible ASCII characters. At least one key
 * must be configured: a lock service open to anyone is never the default.
 *
 * @throws `ERR_AIRLOCK_OPTION` naming the level and the fix; never echoes a key.
 */
export function keyRing(apiKeys: ApiKeys | undefined, env: NodeJS.ProcessEnv = process.env): KeyRing {
  const fromEnv = apiKeys === undefined
  const given = fromEnv ? apiKeysFromEnv(env) : apiKeys
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    optionError(
      `apiKeys must be an object { read, readLock, write } of strings or string arrays, got ${received(given)}`,
    )
  }
  knownKeys('apiKeys', given, LEVEL_NAMES)
  const keys: Record<LevelName, string[]> = { read: [], readLock: [], write: [] }
  for (const name of LEVEL_NAMES) {
    const value = given[name]
    if (value === undefined) continue
    const list = typeof value === 'string' ? [value] : value
    if (!Array.isArray(list))
      optionError(`apiKeys.${name} must be a string or an array of strings, got ${received(value)}`)
    keys[name] = list.map((key) => checkKey(`apiKeys.${name}`, key))
  }
  if (LEVEL_NAMES.every((name) => keys[name].length === 0)) {
    optionError(
      fromEnv
        ? `the lock service needs at least one API key: pass apiKeys: { read, readLock, write } or set ${KEY_ENV.write} ` +
            `(and optionally ${KEY_ENV.readLock}, ${KEY_ENV.read}); e.g. ${KEY_ENV.write}=$(openssl rand -hex 24)`
        : 'apiKeys must hold at least one key (read, readLock or write)',
    )
  }
  return new KeyRing(keys)
}

function checkKey(where: string, key: unknown): string {
  if (typeof key !== 'string' || !KEY_FORMAT.test(key)) {
    const got = typeof key === 'string' ? `a string of ${key.length} characters` : received(key)
    optionError(
      `${where} keys must be 16 to 256 visible ASCII characters without spaces (e.g. openssl rand -hex 24), got ${got}`,
    )
  }
  return key
}
