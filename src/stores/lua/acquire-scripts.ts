/**
 * The Redis store's decision scripts: a slot now, or a place in line (ACQUIRE, one request with the
 * line, the client's share, the admission rate), and a tick's plain acquires of one semaphore in one
 * call (ACQUIRE_MANY). The other operations' scripts are in scripts.ts, which lists them all.
 */
import { BATCH_REPLY_WIDTH, luaGroup } from './boundary.js'
import { ADMISSION_WINDOW_MS, KEY_SLACK_MS, PRE_QUEUE_BASE } from './prelude.js'
import { script } from './script.js'

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
