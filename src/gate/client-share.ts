/**
 * Each client's share of a gate (`clientShare`, `clientKey`): who the client is (its address block,
 * or a key the application gives), and how much of the gate it may hold. The counting itself is the
 * store's (`AcquireRequest.client`), so the share holds across every instance.
 */
import { createHash } from 'node:crypto'
import { addressBlock } from '../base/client-address.js'
import { optionError } from '../base/errors.js'
import { boundedCount, received, knownKeys } from '../base/validate.js'
import type { ClientShare } from '../stores/types.js'
import type { ClientShareOptions } from './option-types.js'

/** A gate's share settings, resolved. */
export interface ClientShareSettings {
  places: number
  /** `undefined`: a quarter of the live limit. */
  slots: number | undefined
  perMinute: number
}

export const SHARE_DEFAULTS = { places: 20, perMinute: 60 } as const
/** Why a share's figures stop at 2^31 − 1, as the gate's limit does. */
const SHARE_BOUND = "a client's share is part of the gate's limit, which stops there too"

/** Checks `clientShare`: `false` turns the share off (`undefined`), `true` or absent gives the defaults. */
export function clientShareSettings(option: unknown): ClientShareSettings | undefined {
  if (option === false) return undefined
  if (option === undefined || option === true) return { ...SHARE_DEFAULTS, slots: undefined }
  if (option === null || typeof option !== 'object' || Array.isArray(option)) {
    optionError(
      `clientShare must be false (no share), true or an object such as { places: 20, perMinute: 60 }, got ${received(option)}`,
    )
  }
  const o = option as ClientShareOptions
  knownKeys('clientShare', o, ['places', 'slots', 'perMinute'])
  const count = (option: string, value: unknown): number => boundedCount(option, value, SHARE_BOUND)
  return {
    places: count('clientShare.places', o.places ?? SHARE_DEFAULTS.places),
    slots: o.slots === undefined ? undefined : count('clientShare.slots', o.slots),
    perMinute: o.perMinute === 0 ? 0 : count('clientShare.perMinute', o.perMinute ?? SHARE_DEFAULTS.perMinute),
  }
}

/** The store's share request for `key` under `limit` in force. */
export function shareFor(s: ClientShareSettings, key: string, limit: number): ClientShare {
  return { key, places: s.places, slots: s.slots ?? Math.max(1, Math.ceil(limit / 4)), perMinute: s.perMinute }
}

const PLAIN_KEY = /^[A-Za-z0-9._:~/-]{1,100}$/

const hashed = (text: string): string => createHash('sha256').update(text).digest('base64url').slice(0, 22)

/**
 * The share key of a client: `clientKey`'s answer (`k:` and the value, hashed when long or
 * unusual), else its address block (`ip:` and an IPv4 address, or an IPv6 /64; a port or brackets
 * as proxies write them are read past), else, for an address no parser reads, a hash of its text
 * (`ip#`: still counted). `undefined` when neither is known (no share then: nothing to count against).
 */
export function clientShareKey(given: unknown, ip: string | undefined): string | undefined {
  if (given !== undefined && given !== null && given !== '') {
    const text = String(given)
    return PLAIN_KEY.test(text) ? `k:${text}` : `k#${hashed(text)}`
  }
  if (ip === undefined || ip === '') return undefined
  return addressBlock(ip) ?? `ip#${hashed(ip.trim().toLowerCase())}`
}

export { addressBlock }
