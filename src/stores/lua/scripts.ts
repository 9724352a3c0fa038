/**
 * The Redis store's scripts: one per operation, each one atomic decision and one round trip (built
 * by {@link script}; the decisions, ACQUIRE and ACQUIRE_MANY, are in acquire-scripts.ts, the
 * adaptive limit's two in adapt-scripts.ts). SCRIPTS lists them all.
 */
import { ACQUIRE, ACQUIRE_MANY } from './acquire-scripts.js'
import { ADAPT, ADAPT_COMMIT } from './adapt-scripts.js'
import { KEY_SLACK_MS, LEFT_KEEP_MS } from './prelude.js'
import { script } from './script.js'

export type { Script } from './script.js'
export { ACQUIRE, ACQUIRE_MANY, ACQUIRE_MANY_ITEM } from './acquire-scripts.js'
export { ADAPT, ADAPT_COMMIT } from './adapt-scripts.js'

/** Extends a live slot owned by token to now + ttl (it no longer counts against its client's share). Returns {expiresAt, fence}, or {} when gone. */
export const REFRESH = script(
  'refresh',
  { token: 's', ttl: 'n' } as const,
  `
local now = now_ms()
local exp = redis.call('ZSCORE', H, token)
if not exp or tonumber(exp) <= now then return {} end
redis.call('ZADD', H, 'XX', now + ttl, token)
local v = redis.call('HMGET', M, token, '#far')
ensure_ttl(now, now + ttl, tonumber(v[2] or '0'))
share_drop(now, token)
local _, fence = parse_meta(v[1])
return {now + ttl, fence}
`,
)

/** ARGV list: tokens (one or a batch). Returns per token the ms its live slot was held (-2: not known), or -1 when it held none. */
export const RELEASE = script(
  'release',
  { channel: 's' } as const,
  `
local now = now_ms()
local out = {}
local any = false
for i = REST, #ARGV do
  local freed, held = release_slot(now, ARGV[i])
  if freed == 1 then any = true end
  out[#out + 1] = freed == 1 and held or -1
end
if any then
  expire_released(now)
  wake(channel)
end
return out
`,
)

/**
 * Cleans up after calls the client gave up on (a timeout while Redis was paused, a reply lost with
 * its connection) whose script may have run anyway: frees each token's slot and its place in line,
 * so a stall never leaves capacity held by a token nobody has. Idempotent. ARGV list: tokens.
 * Returns how many slots and places it freed.
 */
export const ABANDON = script(
  'abandon',
  { channel: 's' } as const,
  `
local now = now_ms()
local freed, left, reserved = 0, 0, false
for i = REST, #ARGV do
  local token = ARGV[i]
  freed = freed + release_slot(now, token)
  if redis.call('ZSCORE', Q, token) then
    if redis.call('ZSCORE', R, token) then reserved = true end
    remove_waiter(token)
    left = left + 1
  end
end
if freed > 0 then expire_released(now) end
if left > 0 then expire_line(now) end
if freed > 0 or reserved then wake(channel) end
return freed + left
`,
)

/**
 * Leaves the line. Returns 1 when the token left it, else 0. Never touches a held slot. `keepOut`:
 * a token without one is marked as left (`:lt`) for LEFT_KEEP_MS.
 */
export const LEAVE = script(
  'leave',
  { token: 's', channel: 's', keepOut: 'b' } as const,
  `
local now = now_ms()
-- keepOut: marked as left for LEFT_KEEP_MS (unless it holds a slot): a poll on its way takes no place (ACQUIRE).
if keepOut and not redis.call('ZSCORE', H, token) then
  redis.call('ZREMRANGEBYSCORE', LT, '-inf', now)
  redis.call('ZADD', LT, now + ${LEFT_KEEP_MS}, token)
  redis.call('PEXPIRE', LT, ${LEFT_KEEP_MS})
end
if not redis.call('ZSCORE', Q, token) then return 0 end
local reserved = redis.call('ZSCORE', R, token)
remove_waiter(token)
expire_line(now)
if reserved then wake(channel) end
return 1
`,
)

/** Read-only. Returns LEASE_ACQUIRED, LEASE_EXPIRED or LEASE_RELEASED. */
export const LEASE_STATE = script(
  'leaseState',
  { token: 's' } as const,
  `
local now = now_ms()
local exp = redis.call('ZSCORE', H, token)
if exp then
  if tonumber(exp) > now then return LEASE_ACQUIRED end
  return LEASE_EXPIRED
end
if redis.call('ZSCORE', X, token) then return LEASE_RELEASED end
return LEASE_EXPIRED
`,
)

/** Returns {held, waiting}. */
export const STATE = script(
  'state',
  {} as const,
  `
local now = now_ms()
local u = settled_used(now)
return {u, redis.call('ZCARD', Q)}
`,
)

/** An instance's report, kept `ttl` ms; returns how many instances' reports are live. Both report keys live as long as their last report. */
export const REPORT = script(
  'report',
  { instance: 's', data: 's', ttl: 'n' } as const,
  `
local now = now_ms()
redis.call('ZADD', IS, now + ttl, instance)
redis.call('HSET', IC, instance, data)
local live = live_reports(now)
local last = redis.call('ZRANGE', IS, -1, -1, 'WITHSCORES')
local keep = tonumber(last[2]) - now + ${KEY_SLACK_MS}
redis.call('PEXPIRE', IS, keep)
redis.call('PEXPIRE', IC, keep)
return #live / 3
`,
)

/**
 * Returns {held, waiting, admitted, windowMs, now, expired, lapsed, #visits, visits..., then id,
 * expiresAt, data per live report} (expired, lapsed, visits: what it dropped, see with_ended).
 */
export const STATUS = script(
  'status',
  {} as const,
  `
local now = now_ms()
local u = settled_used(now)
local adm, window = admissions(now)
local out = {u, redis.call('ZCARD', Q), adm, window, now, ended_expired, ended_lapsed, #ended_visits}
for i = 1, #ended_visits do out[#out + 1] = ended_visits[i] end
for _, v in ipairs(live_reports(now)) do out[#out + 1] = v end
return out
`,
)

/**
 * Reads, or patches, the live control record: ARGV list `field, value` pairs; an empty value
 * deletes the field. A patch bumps `#v` and publishes the new version on `channel`. Returns
 * {now, field, value, ...} (the whole record after the patch).
 */
export const CONTROL = script(
  'control',
  { channel: 's' } as const,
  `
local now = now_ms()
if #ARGV >= REST then
  for i = REST, #ARGV, 2 do
    if ARGV[i + 1] == '' then redis.call('HDEL', CTL, ARGV[i]) else redis.call('HSET', CTL, ARGV[i], ARGV[i + 1]) end
  end
  local v = redis.call('HINCRBY', CTL, '#v', 1)
  redis.call('PUBLISH', channel, v)
end
local out = {now}
for _, x in ipairs(redis.call('HGETALL', CTL)) do out[#out + 1] = x end
return out
`,
)

/** Drops every slot (the line stays; its head is woken). Returns how many. */
export const FORCE_RELEASE_ALL = script(
  'forceReleaseAll',
  { channel: 's' } as const,
  `
local now = now_ms()
purge_holders(now, load_used())
local tokens = redis.call('ZRANGE', H, 0, -1)
for i = 1, #tokens do remember_release(now, tokens[i]) end
if #tokens > 0 then expire_released(now) end
redis.call('DEL', H, M)
wake(channel)
return #tokens
`,
)

/** Every script, for registration checks and the Lua lint. */
export const SCRIPTS = [
  ACQUIRE,
  ACQUIRE_MANY,
  REFRESH,
  RELEASE,
  ABANDON,
  LEAVE,
  LEASE_STATE,
  STATE,
  STATUS,
  REPORT,
  CONTROL,
  ADAPT,
  ADAPT_COMMIT,
  FORCE_RELEASE_ALL,
] as const
