/**
 * What every script of the Redis store shares: the keys as Lua locals, and the Lua functions
 * (purging, fences, the line, reservations, releases; the client shares' in shares.ts). The keys
 * and their constants are described in keys.ts; the scripts themselves are in scripts.ts.
 *
 * The common case (line empty, room free) takes a fast path of about seven Redis calls; the rest
 * (the line, reservations, idempotent re-entry) takes the general path.
 */

import { luaLeaseCodes, luaReplies } from './boundary.js'
import {
  ADMISSION_WINDOW_MS,
  ENDED_VISITS,
  FENCE_KEEP_MS,
  KEY_SLACK_MS,
  RELEASED_KEEP_MS,
  RELEASED_MEMORY,
} from './keys.js'
import { SHARE_FUNCTIONS } from './shares.js'

export {
  ADMISSION_WINDOW_MS,
  ENDED_VISITS,
  FENCE_KEEP_MS,
  KEY_SLACK_MS,
  KEY_SUFFIXES,
  LEFT_KEEP_MS,
  PRE_QUEUE_BASE,
  RELEASED_KEEP_MS,
  RELEASED_MEMORY,
} from './keys.js'
export { SHARE_KEEP_MS } from './shares.js'

/** Lapsed places removed per variadic call (well under Lua's unpack limit). */
const SWEEP_CHUNK = 1000

export const PRELUDE = `
local H, M, F, Q, S = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local QM, R, N, A, X = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local IS, IC, RT, CTL, AD, E = KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15], KEYS[16]
local CS, CT, CX, LT = KEYS[17], KEYS[18], KEYS[19], KEYS[20]
${luaReplies()}
${luaLeaseCodes()}

-- What this call dropped as it went, for its reply to tell (with_ended): slots that expired (and
-- how long up to ${ENDED_VISITS} of them lived, ms), places in line that lapsed.
local ended_expired, ended_lapsed, ended_visits = 0, 0, {}

-- reply, followed by what this call dropped when it dropped anything: expired, lapsed, #visits, visits...
local function with_ended(reply)
  if ended_expired == 0 and ended_lapsed == 0 then return reply end
  reply[#reply + 1] = ended_expired
  reply[#reply + 1] = ended_lapsed
  reply[#reply + 1] = #ended_visits
  for i = 1, #ended_visits do reply[#reply + 1] = ended_visits[i] end
  return reply
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A holder's ":m" value. Fences are above 10^14 (seeded from the clock): '..' would print them
-- with only 14 significant digits, so they are formatted whole.
local function slot_meta(weight, fence)
  return weight .. ',' .. string.format('%.0f', fence)
end

local function parse_meta(meta)
  if not meta then return 0, 0 end
  local w, f = string.match(meta, '^(%d+),(%d+)$')
  return tonumber(w), tonumber(f)
end

-- Live weight units and the time the slot keys are known to live until.
local function load_used()
  local v = redis.call('HMGET', M, '#used', '#far')
  return tonumber(v[1] or '0'), tonumber(v[2] or '0')
end

-- Stores the new used count; :m goes away with the last slot (it then holds nothing).
local function store_used(u)
  if u <= 0 then
    redis.call('DEL', M)
    return 0
  end
  redis.call('HSET', M, '#used', u)
  return u
end

-- Drops expired slots and gives their weight back. Returns the new used count.
-- Each one is told in the reply (with_ended) with how long it lived: a fence is its grant's time
-- x 1000 (see next_fence), so a slot lived from fence / 1000 to its expiry.
local function purge_holders(now, u)
  local dead = redis.call('ZRANGEBYSCORE', H, '-inf', now, 'WITHSCORES')
  if #dead == 0 then return u end
  local ids = {}
  for i = 1, #dead, 2 do ids[#ids + 1] = dead[i] end
  local metas = redis.call('HMGET', M, unpack(ids))
  for i = 1, #ids do
    local w, fence = parse_meta(metas[i])
    u = u - w
    ended_expired = ended_expired + 1
    local lived = tonumber(dead[2 * i]) - math.floor(fence / 1000)
    if #ended_visits < ${ENDED_VISITS} and fence >= 1e15 and lived >= 0 then ended_visits[#ended_visits + 1] = lived end
  end
  redis.call('ZREMRANGEBYSCORE', H, '-inf', now)
  redis.call('HDEL', M, unpack(ids))
  return store_used(u)
end

-- Makes :h and :m live at least until exp (plus slack), extending in steps so most calls skip it.
-- Returns the new far time.
-- The fencing counter is renewed here too: every acquire either extends these keys or finds them
-- extended less than \`keep\` ago, so the counter outlives its last use by FENCE_KEEP_MS.
local function ensure_ttl(now, exp, far)
  if exp <= far then return far end
  local keep = exp - now + ${KEY_SLACK_MS}
  redis.call('PEXPIRE', H, keep)
  redis.call('PEXPIRE', M, keep)
  redis.call('PEXPIRE', F, ${FENCE_KEEP_MS} + keep)
  redis.call('HSET', M, '#far', now + keep)
  return now + keep
end

-- Fences never fall below the server clock (ms x 1000): a counter that lost its last increments
-- (a failover to a replica that had not received them, asynchronous replication) or the whole key
-- (a restart without persistence, a new semaphore) goes on above every fence handed out before,
-- which grew by one per acquisition, far fewer than 1,000 per ms. Within one ms the counter adds
-- one per acquisition. (It assumes the new server's clock is not behind the old one by more than
-- the failover took.)
local function next_fence(now)
  local fence = redis.call('INCR', F)
  if fence < now * 1000 then
    fence = now * 1000
    redis.call('SET', F, string.format('%.0f', fence), 'PX', ${FENCE_KEEP_MS})
  end
  return fence
end

-- True while no slot may be granted because the server changed under the semaphore: a replica
-- promoted (by Sentinel, a managed service, CLUSTER FAILOVER) serves a new replication history,
-- so its replication id differs from the one recorded at the last grant, and the slots granted
-- just before may not have reached it. Then nothing is granted for ttl (every slot that may have
-- been lost has expired by then; its holder learns it at its next refresh). The same in every
-- topology and for every client, and sure: the id is the server's own.
local function server_changed(now, ttl)
  local id = string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)') or ''
  local v = redis.call('HMGET', E, 'id', 'q')
  if v[1] ~= id then
    if v[1] then
      redis.call('HSET', E, 'id', id, 'q', now + ttl)
    else
      redis.call('HSET', E, 'id', id)
    end
    redis.call('PEXPIRE', E, ${FENCE_KEEP_MS})
    return v[1] ~= false
  end
  return v[2] ~= false and tonumber(v[2]) > now
end

-- A new place's arrival number: the line's counter, never below the clock (ms x 1000, as fences),
-- so a place's number / 1000 is when it was taken (see arrived_at).
local function arrival(now)
  local n = redis.call('INCR', N)
  if n < now * 1000 then
    n = now * 1000
    redis.call('SET', N, string.format('%.0f', n))
  end
  return string.format('%.0f', n)
end

-- When waiter id took its place (ms), or nil: a pre-queue place (below 0), or one numbered before
-- arrival numbers followed the clock.
local function arrived_at(id)
  local score = tonumber(redis.call('ZSCORE', Q, id) or '-1')
  if score < 1e15 then return nil end
  return math.floor(score / 1000)
end

local function waiter_meta(id)
  local w, cw = string.match(redis.call('HGET', QM, id) or '1,0', '^(%d+),(%d+)$')
  return tonumber(w), tonumber(cw)
end

local function remove_waiter(id)
  if redis.call('ZREM', R, id) == 1 then redis.call('HINCRBY', QM, '#rw', -waiter_meta(id)) end
  redis.call('ZREM', Q, id)
  redis.call('ZREM', S, id)
  redis.call('HDEL', QM, id)
end

-- Removes the waiters ids (at most ${SWEEP_CHUNK}) in a few variadic calls; reserved ones give their room back.
local function remove_waiters(ids)
  local reserved = redis.call('ZMSCORE', R, unpack(ids))
  local back = 0
  for i = 1, #ids do
    if reserved[i] then back = back + waiter_meta(ids[i]) end
  end
  if back > 0 then redis.call('HINCRBY', QM, '#rw', -back) end
  redis.call('ZREM', R, unpack(ids))
  redis.call('ZREM', Q, unpack(ids))
  redis.call('ZREM', S, unpack(ids))
  redis.call('HDEL', QM, unpack(ids))
end

-- Waiters not seen for their idle timeout (a new place: its confirm timeout) lose their place.
-- All of them, so positions and the length cap count live places only (a burst of cookie-less
-- visitors leaves thousands of places that lapse together).
local function purge_waiters(now)
  while true do
    local idle = redis.call('ZRANGEBYSCORE', S, '-inf', now, 'LIMIT', 0, ${SWEEP_CHUNK})
    if #idle == 0 then return end
    remove_waiters(idle)
    ended_lapsed = ended_lapsed + #idle
    if #idle < ${SWEEP_CHUNK} then return end
  end
end

local function next_expiry()
  local first = redis.call('ZRANGE', H, 0, 0, 'WITHSCORES')
  if first[2] then return tonumber(first[2]) end
  return -1
end

-- Keeps the line's keys alive as long as its last deadline or reservation.
local function expire_line(now)
  local last = redis.call('ZRANGE', S, -1, -1, 'WITHSCORES')
  if last[2] then
    local keep = tonumber(last[2]) - now + ${KEY_SLACK_MS}
    local held = redis.call('ZRANGE', R, -1, -1, 'WITHSCORES')
    if held[2] and tonumber(held[2]) - now + ${KEY_SLACK_MS} > keep then keep = tonumber(held[2]) - now + ${KEY_SLACK_MS} end
    for _, key in ipairs({Q, S, QM, R, N}) do redis.call('PEXPIRE', key, keep) end
  else
    redis.call('DEL', Q, S, QM, R, N)
  end
end

-- What a reader (STATE, STATUS) sees: lapsed holders and waiters gone; returns the units held.
local function settled_used(now)
  local u = purge_holders(now, load_used())
  purge_waiters(now)
  expire_line(now)
  return u
end

-- Calls visit(id) for the waiters of the line in arrival order, in pages, until it returns true.
local function each_waiter(visit)
  local from = 0
  while true do
    local page = redis.call('ZRANGE', Q, from, from + 31)
    for i = 1, #page do
      if visit(page[i]) then return end
    end
    if #page < 32 then return end
    from = from + 32
  end
end

-- The first waiter without a reservation (the one to wake when room may have appeared), or nil.
local function first_open()
  local found = nil
  each_waiter(function(id)
    if redis.call('ZSCORE', R, id) then return false end
    found = id
    return true
  end)
  return found
end

-- A waiter without a reservation drawn uniformly among the open ones; x is a Park-Miller state.
local function draw_open(x, n, open)
  if open * 2 >= n then
    while true do
      x = (x * 16807) % 2147483647
      local id = redis.call('ZRANGE', Q, math.floor(x / 2147483647 * n), math.floor(x / 2147483647 * n))[1]
      if not redis.call('ZSCORE', R, id) then return id, x end
    end
  end
  -- Mostly reserved (so n < 2 * limit): list the open ones.
  local list = {}
  each_waiter(function(id)
    if not redis.call('ZSCORE', R, id) then list[#list + 1] = id end
    return false
  end)
  x = (x * 16807) % 2147483647
  return list[math.floor(x / 2147483647 * #list) + 1], x
end

-- The admission rate (a GCRA over RT): at most rate admissions per minute, in bursts of up to a
-- second's worth (at least 2, so steady demand never loses credit to arrival jitter). rate_room:
-- admissions allowed now; rate_take: records one.
local function rate_room(now, rate)
  local t = 60000 / rate
  local tau = t * (math.max(2, math.floor(rate / 60)) - 1)
  local tat = math.max(tonumber(redis.call('GET', RT) or '0'), now)
  return math.max(0, math.floor((now + tau - tat) / t) + 1)
end

local function rate_take(now, rate)
  local tat = math.max(tonumber(redis.call('GET', RT) or '0'), now) + 60000 / rate
  redis.call('SET', RT, string.format('%.3f', tat), 'PX', math.ceil(tat - now) + ${KEY_SLACK_MS})
end

-- Settles the line: waiters whose reservation lapsed lose their place; free room is then reserved
-- for the next waiters (arrival order, or drawn at random), as many as fit, each for its claim
-- window. A waiter that does not fit ends the round (nobody overtakes it). Returns the ids reserved.
-- A scheduled opening's pre-queue (scores below 0) is admitted whole before anyone behind it: while
-- a pre-queue place is still in line, nobody behind it is reserved.
local function settle(now, limit, u, seed)
  local lapsed = redis.call('ZRANGEBYSCORE', R, '-inf', now)
  for i = 1, #lapsed do remove_waiter(lapsed[i]) end
  ended_lapsed = ended_lapsed + #lapsed
  local fresh = {}
  local free = limit - u - tonumber(redis.call('HGET', QM, '#rw') or '0')
  if free <= 0 then return fresh end
  local n = redis.call('ZCARD', Q)
  local open = n - redis.call('ZCARD', R)
  if open <= 0 then return fresh end
  local function reserve(id)
    local w, cw = waiter_meta(id)
    if w > free then return false end
    redis.call('ZADD', R, now + cw, id)
    redis.call('HINCRBY', QM, '#rw', w)
    free = free - w
    open = open - 1
    fresh[#fresh + 1] = id
    return true
  end
  if redis.call('HGET', QM, '#o') == 'r' then
    local x = seed
    while free > 0 and open > 0 do
      local id
      id, x = draw_open(x, n, open)
      if not reserve(id) then break end
    end
  else
    local head = redis.call('ZRANGE', Q, 0, 0, 'WITHSCORES')
    local barrier = head[2] ~= nil and tonumber(head[2]) < 0
    each_waiter(function(id)
      if redis.call('ZSCORE', R, id) then return false end
      if barrier and tonumber(redis.call('ZSCORE', Q, id)) >= 0 then return true end
      return not reserve(id) or free <= 0
    end)
  end
  return fresh
end

-- Tells waiting processes that room may be theirs (best effort).
local function wake(channel)
  local id = first_open()
  if id then redis.call('PUBLISH', channel, id) end
end

-- Recent admissions from the line and the span they cover, for an ETA.
local function admissions(now)
  redis.call('ZREMRANGEBYSCORE', A, '-inf', now - ${ADMISSION_WINDOW_MS})
  local first = redis.call('ZRANGE', A, 0, 0, 'WITHSCORES')
  local window = 0
  if first[2] then window = now - tonumber(first[2]) end
  return redis.call('ZCARD', A), window
end

-- Remembers a release for leaseState (call expire_released once after).
local function remember_release(now, token)
  redis.call('ZADD', X, now, token)
end

-- Keeps the list of recent releases short and bounded (trimmed on about one call in 64).
local function expire_released(now)
  redis.call('PEXPIRE', X, ${RELEASED_KEEP_MS})
  if now % 64 == 0 then
    redis.call('ZREMRANGEBYSCORE', X, '-inf', now - ${RELEASED_KEEP_MS})
    redis.call('ZREMRANGEBYRANK', X, 0, -${RELEASED_MEMORY + 1})
  end
end

-- Drops the reports of instances whose ttl passed; returns the live ones as {id, expiresAt, data, ...}.
local function live_reports(now)
  local gone = redis.call('ZRANGEBYSCORE', IS, '-inf', now)
  if #gone > 0 then
    redis.call('ZREMRANGEBYSCORE', IS, '-inf', now)
    redis.call('HDEL', IC, unpack(gone))
  end
  local live = redis.call('ZRANGE', IS, 0, -1, 'WITHSCORES')
  local out = {}
  for i = 1, #live, 2 do
    out[#out + 1] = live[i]
    out[#out + 1] = tonumber(live[i + 1])
    out[#out + 1] = redis.call('HGET', IC, live[i]) or ''
  end
  return out
end
${SHARE_FUNCTIONS}
-- Frees token's live slot and remembers the release: 1, or 0 when it held none (an expired slot is
-- purged with the others). Call expire_released and wake once after a batch.
-- Frees token's live slot: returns 1 and how long the slot was held (ms; -2 when its fence does not
-- tell: see purge_holders), or 0 when it held no live slot.
local function release_slot(now, token)
  local exp = redis.call('ZSCORE', H, token)
  if not exp then return 0 end
  if tonumber(exp) <= now then
    purge_holders(now, load_used())
    return 0
  end
  local v = redis.call('HMGET', M, token, '#used')
  local w, fence = parse_meta(v[1])
  redis.call('ZREM', H, token)
  if store_used(tonumber(v[2] or '0') - w) > 0 then redis.call('HDEL', M, token) end
  remember_release(now, token)
  local held = now - math.floor(fence / 1000)
  if fence < 1e15 or held < 0 then held = -2 end
  return 1, held
end
`
