/**
 * The Redis store's scripts: one per operation, each one atomic decision and one round trip (built
 * by {@link script}; the adaptive limit's two are in adapt-scripts.ts).
 */
import { BATCH_REPLY_WIDTH, luaGroup } from './boundary.js'
import { ADMISSION_WINDOW_MS, KEY_SLACK_MS, LEFT_KEEP_MS, PRE_QUEUE_BASE } from './prelude.js'
import { script } from './script.js'
import { ADAPT, ADAPT_COMMIT } from './adapt-scripts.js'

export type { Script } from './script.js'
export { ADAPT, ADAPT_COMMIT } from './adapt-scripts.js'

/**
 * One decision for `token`: a slot now, or (with `queued`) a place in line kept or taken, or a poll
 * (`mayAdmit` false: never admits, never joins). `confirm` 0: a new place counts at once; `seed`
 * (1..2^31-2) drives random draws. `rate` > 0: at most that many admissions per minute (GCRA on
 * RT). `hold`: the line is held (nobody admitted; room reserved before the hold may still be
 * claimed; places are kept and taken). `shuffle` > 0: a new place's score is shuffle - 2^52, ahead
 * of every arrival-numbered place, in random order among such places (a scheduled opening's
 * pre-queue). `client` (non-empty): a token new to the semaphore is refused (`share`) when that
 * client holds `sharePlaces` unconfirmed slots and places, or `shareSlots` slots, or took
 * `sharePerMinute` in the last minute (a GCRA; 0: no rate). Replies: acquired | busy | queued |
 * full | absent | share, then what the call dropped (with_ended).
 */
export const ACQUIRE = script(
  'acquire',
  {
    token: 's',
    limit: 'n',
    ttl: 'n',
    weight: 'n',
    queued: 'b',
    idle: 'n',
    claim: 'n',
    maxLength: 'n',
    order: 's',
    mayAdmit: 'b',
    channel: 's',
    confirm: 'n',
    seed: 'n',
    rate: 'n',
    hold: 'b',
    shuffle: 'n',
    client: 's',
    sharePlaces: 'n',
    shareSlots: 'n',
    sharePerMinute: 'n',
  } as const,
  `
local now = now_ms()
local u, far = load_used()
u = purge_holders(now, u)
if u == 0 then far = 0 end
local length = redis.call('ZCARD', Q)
-- What this call may fill up to: the limit, or less while the admission rate allows fewer.
local cap = limit
if rate > 0 then cap = math.min(limit, u + rate_room(now, rate)) end
-- After a promotion, nobody new is admitted (a holder's own slot is still found), not from the line either.
local changed = server_changed(now, ttl)
if changed and not queued and not redis.call('ZSCORE', H, token) then
  return with_ended(reply_busy(now, next_expiry()))
end
local admits = mayAdmit and not hold and not changed

-- Left the line a moment ago (LEAVE marked it): a poll already on its way takes no place and no slot.
if queued and mayAdmit then
  local gone = redis.call('ZSCORE', LT, token)
  if gone and tonumber(gone) > now and not redis.call('ZSCORE', H, token) then return reply_absent(now) end
end

-- A token new to the semaphore counts against its client's share (client ''; no share): checked
-- once, and counted by the grant that follows (shared).
local keep = math.max(ttl, idle)
local shared = false
local function share_ok()
  if client == '' then return true end
  share_sweep(now, keep)
  if not share_allows(now, client, sharePlaces, shareSlots, sharePerMinute) then return false end
  shared = true
  return true
end

-- A new slot for token (added to :h, expiring at exp, unless the caller did). fromLine: admitted
-- from the line; only those admissions are recorded for the ETA: they measure how fast the line
-- moves (direct admissions while nobody waits measure arrivals). arrived: when its place was
-- taken (nil when not known), for the wait it answers.
local function admitted(fromLine, exp, arrived)
  if not exp then
    exp = now + ttl
    redis.call('ZADD', H, exp, token)
  end
  local fence = next_fence(now)
  u = u + weight
  redis.call('HSET', M, token, slot_meta(weight, fence), '#used', u)
  ensure_ttl(now, exp, far)
  if rate > 0 then rate_take(now, rate) end
  if shared then share_take(now, client, token, sharePerMinute, keep) end
  if fromLine then
    redis.call('ZADD', A, now, token)
    redis.call('ZREMRANGEBYSCORE', A, '-inf', now - ${ADMISSION_WINDOW_MS})
    redis.call('PEXPIRE', A, ${ADMISSION_WINDOW_MS + KEY_SLACK_MS})
  end
  return reply_acquired(fence, exp, now, arrived and math.max(0, now - arrived) or -1)
end

-- Fast path: nobody in line and room free.
if length == 0 and admits and u + weight <= cap then
  local exp = now + ttl
  if client == '' then
    if redis.call('ZADD', H, 'NX', exp, token) == 1 then return with_ended(admitted(false, exp)) end
  elseif not redis.call('ZSCORE', H, token) then
    if not share_ok() then return with_ended(reply_share(now)) end
    redis.call('ZADD', H, exp, token)
    return with_ended(admitted(false, exp))
  end
end

local held = redis.call('ZSCORE', H, token)
if held then
  local _, fence = parse_meta(redis.call('HGET', M, token))
  return with_ended(reply_acquired(fence, tonumber(held), now, -1))
end
if length == 0 and not queued then return with_ended(reply_busy(now, next_expiry())) end

purge_waiters(now)
-- A sign of life: the waiter keeps its place for idleTimeout (a new place had only confirmTimeout).
local mine = queued and redis.call('ZSCORE', Q, token) ~= false
if mine then redis.call('ZADD', S, now + idle, token) end
if client ~= '' and not mine and mayAdmit and not share_ok() then
  expire_line(now)
  return with_ended(reply_share(now))
end

-- Settles the line; admits the caller when room is reserved for it. Wakes the others reserved now.
local function settle_and_claim()
  if not hold then
    local fresh = settle(now, cap, u, seed)
    for i = 1, #fresh do
      if fresh[i] ~= token then redis.call('PUBLISH', channel, fresh[i]) end
    end
  end
  if mayAdmit and redis.call('ZSCORE', R, token) then
    local arrived = arrived_at(token)
    remove_waiter(token)
    return admitted(true, nil, arrived)
  end
  return nil
end

local function in_line()
  local adm, window = admissions(now)
  return reply_queued(redis.call('ZRANK', Q, token) + 1, redis.call('ZCARD', Q), now, next_expiry(), adm, window)
end

local result
length = redis.call('ZCARD', Q)
if length == 0 then
  if admits and u + weight <= cap then result = admitted(false) end
else
  result = settle_and_claim()
  -- settle may have just skipped the caller itself (its reservation lapsed): it is no longer in
  -- line, and is treated as a newcomer (a poll reads absent).
  if mine and not redis.call('ZSCORE', Q, token) then mine = false end
end

if not result then
  if mine then
    result = in_line()
  elseif not queued then
    result = reply_busy(now, next_expiry())
  elseif not mayAdmit then
    result = reply_absent(now)
  else
    length = redis.call('ZCARD', Q)
    if maxLength > 0 and length >= maxLength then
      result = reply_full(length, now)
    else
      local number = shuffle > 0 and shuffle - ${PRE_QUEUE_BASE} or arrival(now)
      redis.call('ZADD', Q, number, token)
      -- A new place lives only confirmTimeout unless the waiter comes back (then idleTimeout).
      redis.call('ZADD', S, now + (confirm > 0 and confirm or idle), token)
      redis.call('HSET', QM, token, weight .. ',' .. claim, '#o', order)
      if shared then
        share_take(now, client, token, sharePerMinute, keep)
        shared = false
      end
      result = settle_and_claim() or in_line()
    end
  end
end
expire_line(now)
return with_ended(result)
`,
)

/** One plain acquire's fields in the batch's ARGV list. */
export const ACQUIRE_MANY_ITEM = {
  token: 's',
  limit: 'n',
  ttl: 'n',
  weight: 'n',
  client: 's',
  sharePlaces: 'n',
  shareSlots: 'n',
  sharePerMinute: 'n',
} as const

/**
 * Many plain acquires (no line) of one semaphore in one call, decided one after another, each as
 * ACQUIRE would (a client's share too). ARGV list: the requests' fields ({@link ACQUIRE_MANY_ITEM}).
 * Replies, each padded to BATCH_REPLY_WIDTH: acquired | busy | share | line (the line is not empty:
 * ask ACQUIRE, which handles it); then what the call dropped (with_ended).
 */
export const ACQUIRE_MANY = script(
  'acquireMany',
  { count: 'n' } as const,
  `
${luaGroup('request', ACQUIRE_MANY_ITEM, 2)}
local now = now_ms()
local u, far = load_used()
u = purge_holders(now, u)
if u == 0 then far = 0 end
local length = redis.call('ZCARD', Q)
local out = {}
local changed = server_changed(now, select(3, request(1)))
local swept = false
for i = 1, count do
  local token, limit, ttl, weight, client, sharePlaces, shareSlots, sharePerMinute = request(i)
  local r
  -- After a promotion (changed) nothing new is granted, but a holder's own slot is still found.
  if length > 0 and not changed then
    r = reply_line()
  else
    local exp = now + ttl
    local held = redis.call('ZSCORE', H, token)
    -- A token new to the semaphore counts against its client's share (as in ACQUIRE).
    local shared = client ~= '' and not held and not changed and u + weight <= limit
    if shared and not swept then
      share_sweep(now, ttl)
      swept = true
    end
    if shared and not share_allows(now, client, sharePlaces, shareSlots, sharePerMinute) then
      r = reply_share(now)
    elseif not held and not changed and u + weight <= limit then
      redis.call('ZADD', H, exp, token)
      local fence = next_fence(now)
      u = u + weight
      redis.call('HSET', M, token, slot_meta(weight, fence), '#used', u)
      far = ensure_ttl(now, exp, far)
      if shared then share_take(now, client, token, sharePerMinute, ttl) end
      r = reply_acquired(fence, exp, now, -1)
    elseif held then
      local _, fence = parse_meta(redis.call('HGET', M, token))
      r = reply_acquired(fence, tonumber(held), now, -1)
    else
      r = reply_busy(now, next_expiry())
    end
  end
  for j = 1, ${BATCH_REPLY_WIDTH} do out[#out + 1] = r[j] or 0 end
end
return with_ended(out)
`,
)

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
