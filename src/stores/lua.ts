/**
 * The Redis store's scripts: one per operation, each one atomic decision and one round trip.
 *
 * Keys of one semaphore share the hash tag `{<prefix>:<name>}` so Redis Cluster keeps them on one
 * slot. Every script receives all of them in KEYS, in this order:
 *
 *  1 `:h`  sorted set, lease token -> expiry (ms, server time)
 *  2 `:m`  hash, lease token -> "weight,fence"; `#used` = live weight units; `#far` = the time up to
 *          which `:h` and `:m` are known to carry an expiry (so most calls skip PEXPIRE). `:m`
 *          exists exactly while a slot is held (it is deleted when `#used` drops to 0).
 *  3 `:f`  fencing counter (INCR; kept at least FENCE_KEEP_MS after last use so fences stay monotonic)
 *  4 `:q`  sorted set, the line: waiter token -> arrival number
 *  5 `:s`  sorted set, waiter token -> time it loses its place unless seen again
 *  6 `:qm` hash, waiter token -> "weight,claimWindow"; `#rw` = weight units reserved for waiters;
 *          `#o` = the line's order ('f' fifo, 'r' random)
 *  7 `:r`  sorted set, reservations: waiter token -> time the room held for it lapses
 *  8 `:n`  arrival counter of the line
 *  9 `:a`  sorted set, recent admissions from the line (token -> time), for the ETA
 * 10 `:x`  sorted set, recent releases (token -> time), for leaseState
 *
 * Time is always `redis.call('TIME')`. Every key gets an expiry, so an idle semaphore leaves
 * nothing behind but its fencing counter (which expires after FENCE_KEEP_MS of disuse) and the
 * short list of recent releases.
 *
 * The common case (line empty, room free) takes a fast path of about seven Redis calls; the rest
 * (the line, reservations, idempotent re-entry) takes the general path.
 */

/** Key suffixes in KEYS order. */
export const KEY_SUFFIXES = ['h', 'm', 'f', 'q', 's', 'qm', 'r', 'n', 'a', 'x'] as const

export const FENCE_KEEP_MS = 30 * 24 * 3600 * 1000
export const ADMISSION_WINDOW_MS = 60_000
export const RELEASED_MEMORY = 1000
export const RELEASED_KEEP_MS = 3_600_000
/** Extra life given to keys past the farthest expiry they hold. */
const KEY_SLACK_MS = 60_000

const PRELUDE = `
local H, M, F, Q, S, QM, R, N, A, X = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
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
local function purge_holders(now, u)
  local dead = redis.call('ZRANGEBYSCORE', H, '-inf', now)
  if #dead == 0 then return u end
  local metas = redis.call('HMGET', M, unpack(dead))
  for i = 1, #dead do u = u - parse_meta(metas[i]) end
  redis.call('ZREMRANGEBYSCORE', H, '-inf', now)
  redis.call('HDEL', M, unpack(dead))
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

local function next_fence()
  local fence = redis.call('INCR', F)
  if fence == 1 then redis.call('PEXPIRE', F, ${FENCE_KEEP_MS}) end
  return fence
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

-- Waiters not seen for their idle timeout (a new place: its confirm timeout) lose their place.
local function purge_waiters(now)
  local idle = redis.call('ZRANGEBYSCORE', S, '-inf', now, 'LIMIT', 0, 500)
  for i = 1, #idle do remove_waiter(idle[i]) end
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

-- Settles the line: waiters whose reservation lapsed lose their place; free room is then reserved
-- for the next waiters (arrival order, or drawn at random), as many as fit, each for its claim
-- window. A waiter that does not fit ends the round (nobody overtakes it). Returns the ids reserved.
local function settle(now, limit, u, seed)
  local lapsed = redis.call('ZRANGEBYSCORE', R, '-inf', now)
  for i = 1, #lapsed do remove_waiter(lapsed[i]) end
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
    each_waiter(function(id)
      if redis.call('ZSCORE', R, id) then return false end
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
`

/**
 * ARGV: token, limit, ttl, weight, queued (0/1), idleTimeout, claimWindow, maxLength, order ('f' or
 * 'r'), mayAdmit (0/1), channel, confirmTimeout (0: a new place counts at once), seed (1..2^31-2,
 * for random draws).
 * Returns {1, fence, expiresAt, now} | {0, now, nextExpiry} | {2, position, waiting, now, nextExpiry,
 * admitted, windowMs} | {3, waiting, now} | {4, now}.
 */
export const ACQUIRE = `${PRELUDE}
local token, limit, ttl, weight = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local queued = ARGV[5] == '1'
local idle, claim, maxlen = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local order, may_admit, channel = ARGV[9], ARGV[10] == '1', ARGV[11]
local confirm, seed = tonumber(ARGV[12]), tonumber(ARGV[13])
local now = now_ms()
local u, far = load_used()
u = purge_holders(now, u)
if u == 0 then far = 0 end
local length = redis.call('ZCARD', Q)

-- A new slot for token (added to :h, expiring at exp, unless the caller did). from_line: admitted
-- from the line; only those admissions are recorded for the ETA: they measure how fast the line
-- moves (direct admissions while nobody waits measure arrivals).
local function admitted(from_line, exp)
  if not exp then
    exp = now + ttl
    redis.call('ZADD', H, exp, token)
  end
  local fence = next_fence()
  u = u + weight
  redis.call('HSET', M, token, weight .. ',' .. fence, '#used', u)
  ensure_ttl(now, exp, far)
  if from_line then
    redis.call('ZADD', A, now, token)
    redis.call('ZREMRANGEBYSCORE', A, '-inf', now - ${ADMISSION_WINDOW_MS})
    redis.call('PEXPIRE', A, ${ADMISSION_WINDOW_MS + KEY_SLACK_MS})
  end
  return {1, fence, exp, now}
end

-- Fast path: nobody in line and room free.
if length == 0 and may_admit and u + weight <= limit then
  local exp = now + ttl
  if redis.call('ZADD', H, 'NX', exp, token) == 1 then return admitted(false, exp) end
end

local held = redis.call('ZSCORE', H, token)
if held then
  local _, fence = parse_meta(redis.call('HGET', M, token))
  return {1, fence, tonumber(held), now}
end
if length == 0 and not queued then return {0, now, next_expiry()} end

purge_waiters(now)
-- A sign of life: the waiter keeps its place for idleTimeout (a new place had only confirmTimeout).
local mine = queued and redis.call('ZSCORE', Q, token) ~= false
if mine then redis.call('ZADD', S, now + idle, token) end

-- Settles the line; admits the caller when room is reserved for it. Wakes the others reserved now.
local function settle_and_claim()
  local fresh = settle(now, limit, u, seed)
  for i = 1, #fresh do
    if fresh[i] ~= token then redis.call('PUBLISH', channel, fresh[i]) end
  end
  if may_admit and redis.call('ZSCORE', R, token) then
    remove_waiter(token)
    return admitted(true)
  end
  return nil
end

local function in_line()
  local adm, window = admissions(now)
  return {2, redis.call('ZRANK', Q, token) + 1, redis.call('ZCARD', Q), now, next_expiry(), adm, window}
end

local result
length = redis.call('ZCARD', Q)
if length == 0 then
  if may_admit and u + weight <= limit then result = admitted(false) end
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
    result = {0, now, next_expiry()}
  elseif not may_admit then
    result = {4, now}
  else
    length = redis.call('ZCARD', Q)
    if maxlen > 0 and length >= maxlen then
      result = {3, length, now}
    else
      redis.call('ZADD', Q, redis.call('INCR', N), token)
      -- A new place lives only confirmTimeout unless the waiter comes back (then idleTimeout).
      redis.call('ZADD', S, now + (confirm > 0 and confirm or idle), token)
      redis.call('HSET', QM, token, weight .. ',' .. claim, '#o', order)
      result = settle_and_claim() or in_line()
    end
  end
end
expire_line(now)
return result
`

/** ARGV: token, ttl. Returns {1, expiresAt, fence} | {0}. */
export const REFRESH = `${PRELUDE}
local token, ttl = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local exp = redis.call('ZSCORE', H, token)
if not exp or tonumber(exp) <= now then return {0} end
redis.call('ZADD', H, 'XX', now + ttl, token)
local v = redis.call('HMGET', M, token, '#far')
ensure_ttl(now, now + ttl, tonumber(v[2] or '0'))
local _, fence = parse_meta(v[1])
return {1, now + ttl, fence}
`

/** ARGV: token, channel. Returns 1 when a live slot was released, else 0. */
export const RELEASE = `${PRELUDE}
local token, channel = ARGV[1], ARGV[2]
local now = now_ms()
local exp = redis.call('ZSCORE', H, token)
if not exp then return 0 end
if tonumber(exp) <= now then
  purge_holders(now, load_used())
  return 0
end
local v = redis.call('HMGET', M, token, '#used')
redis.call('ZREM', H, token)
if store_used(tonumber(v[2] or '0') - parse_meta(v[1])) > 0 then redis.call('HDEL', M, token) end
remember_release(now, token)
expire_released(now)
wake(channel)
return 1
`

/** ARGV: token, channel. Returns 1 when the token left the line, else 0. */
export const LEAVE = `${PRELUDE}
local token, channel = ARGV[1], ARGV[2]
local now = now_ms()
if not redis.call('ZSCORE', Q, token) then return 0 end
local reserved = redis.call('ZSCORE', R, token)
remove_waiter(token)
expire_line(now)
if reserved then wake(channel) end
return 1
`

/** ARGV: token. Returns 1 acquired, 2 expired, 3 released. Read-only. */
export const LEASE_STATE = `${PRELUDE}
local token = ARGV[1]
local now = now_ms()
local exp = redis.call('ZSCORE', H, token)
if exp then
  if tonumber(exp) > now then return 1 end
  return 2
end
if redis.call('ZSCORE', X, token) then return 3 end
return 2
`

/** No ARGV. Returns {held, waiting}. */
export const STATE = `${PRELUDE}
local now = now_ms()
local u = purge_holders(now, load_used())
purge_waiters(now)
expire_line(now)
return {u, redis.call('ZCARD', Q)}
`

/** ARGV: channel. Returns how many slots were dropped. */
export const FORCE_RELEASE_ALL = `${PRELUDE}
local channel = ARGV[1]
local now = now_ms()
purge_holders(now, load_used())
local tokens = redis.call('ZRANGE', H, 0, -1)
for i = 1, #tokens do remember_release(now, tokens[i]) end
if #tokens > 0 then expire_released(now) end
redis.call('DEL', H, M)
wake(channel)
return #tokens
`

/**
 * Many plain acquires (no line) of one semaphore in one call, decided one after another, each as
 * ACQUIRE would. ARGV: count, then per request: token, limit, ttl, weight.
 * Returns 4 numbers per request: {1, fence, expiresAt, now} | {0, now, nextExpiry, 0} | {5, 0, 0, 0}
 * (5: the line is not empty; ask again with ACQUIRE, which handles the line).
 */
export const ACQUIRE_MANY = `${PRELUDE}
local count = tonumber(ARGV[1])
local now = now_ms()
local u, far = load_used()
u = purge_holders(now, u)
if u == 0 then far = 0 end
local length = redis.call('ZCARD', Q)
local out = {}
for i = 0, count - 1 do
  local token, limit, ttl, weight = ARGV[2 + i * 4], tonumber(ARGV[3 + i * 4]), tonumber(ARGV[4 + i * 4]), tonumber(ARGV[5 + i * 4])
  local r
  if length > 0 then
    r = {5, 0, 0, 0}
  else
    local exp = now + ttl
    if u + weight <= limit and redis.call('ZADD', H, 'NX', exp, token) == 1 then
      local fence = next_fence()
      u = u + weight
      redis.call('HSET', M, token, weight .. ',' .. fence, '#used', u)
      far = ensure_ttl(now, exp, far)
      r = {1, fence, exp, now}
    else
      local held = redis.call('ZSCORE', H, token)
      if held then
        local _, fence = parse_meta(redis.call('HGET', M, token))
        r = {1, fence, tonumber(held), now}
      else
        r = {0, now, next_expiry(), 0}
      end
    end
  end
  for j = 1, 4 do out[#out + 1] = r[j] end
end
return out
`

/** Many releases of one semaphore in one call. ARGV: channel, tokens... Returns 1/0 per token. */
export const RELEASE_MANY = `${PRELUDE}
local channel = ARGV[1]
local now = now_ms()
local out = {}
local any = false
local purged = false
for i = 2, #ARGV do
  local token = ARGV[i]
  local exp = redis.call('ZSCORE', H, token)
  if not exp then
    out[#out + 1] = 0
  elseif tonumber(exp) <= now then
    if not purged then
      purge_holders(now, load_used())
      purged = true
    end
    out[#out + 1] = 0
  else
    local v = redis.call('HMGET', M, token, '#used')
    redis.call('ZREM', H, token)
    if store_used(tonumber(v[2] or '0') - parse_meta(v[1])) > 0 then redis.call('HDEL', M, token) end
    remember_release(now, token)
    any = true
    out[#out + 1] = 1
  end
end
if any then
  expire_released(now)
  wake(channel)
end
return out
`
