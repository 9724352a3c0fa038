/**
 * The Redis store's scripts: one per operation, each one atomic decision and one round trip.
 *
 * Keys of one semaphore share the hash tag `{<prefix>:<name>}` so Redis Cluster keeps them on one
 * slot. Every script receives all of them in KEYS, in this order:
 *
 *  1 `:h`  sorted set, lease token -> expiry (ms, server time)
 *  2 `:m`  hash, lease token -> "weight,fence"; field `#used` = live weight units
 *  3 `:f`  fencing counter (INCR; kept FENCE_KEEP_MS after last use so fences stay monotonic)
 *  4 `:q`  sorted set, the line: waiter token -> arrival number (fifo) or random score (lottery)
 *  5 `:s`  sorted set, waiter token -> time it loses its place unless seen again
 *  6 `:qm` hash, waiter token -> "weight,claimWindow"
 *  7 `:r`  hash, the head's reservation: id, until
 *  8 `:n`  arrival counter of the line
 *  9 `:a`  sorted set, recent admissions from the line (token -> time), for the ETA
 * 10 `:x`  sorted set, recent releases (token -> time), for leaseState
 *
 * Time is always `redis.call('TIME')`. Every key gets an expiry, so an idle semaphore leaves
 * nothing behind but its fencing counter (which expires after FENCE_KEEP_MS of disuse).
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

local function used()
  return tonumber(redis.call('HGET', M, '#used') or '0')
end

local function set_used(u)
  if u <= 0 then redis.call('HDEL', M, '#used') else redis.call('HSET', M, '#used', u) end
end

local function meta_of(token)
  local meta = redis.call('HGET', M, token)
  if not meta then return 0, 0 end
  local w, f = string.match(meta, '^(%d+),(%d+)$')
  return tonumber(w), tonumber(f)
end

-- Drops expired slots and gives their weight back.
local function purge_holders(now)
  local dead = redis.call('ZRANGEBYSCORE', H, '-inf', now)
  if #dead == 0 then return end
  local freed = 0
  for i = 1, #dead do
    local w = meta_of(dead[i])
    freed = freed + w
    redis.call('HDEL', M, dead[i])
  end
  redis.call('ZREMRANGEBYSCORE', H, '-inf', now)
  set_used(used() - freed)
end

local function remove_waiter(id)
  redis.call('ZREM', Q, id)
  redis.call('ZREM', S, id)
  redis.call('HDEL', QM, id)
  if redis.call('HGET', R, 'id') == id then redis.call('DEL', R) end
end

-- Waiters not seen for their idle timeout lose their place.
local function purge_waiters(now)
  local idle = redis.call('ZRANGEBYSCORE', S, '-inf', now, 'LIMIT', 0, 500)
  for i = 1, #idle do remove_waiter(idle[i]) end
end

local function next_expiry()
  local first = redis.call('ZRANGE', H, 0, 0, 'WITHSCORES')
  if first[2] then return tonumber(first[2]) end
  return -1
end

-- Keeps the slot keys alive as long as their farthest slot.
local function expire_holders(now)
  local last = redis.call('ZRANGE', H, -1, -1, 'WITHSCORES')
  if last[2] then
    local keep = tonumber(last[2]) - now + ${KEY_SLACK_MS}
    redis.call('PEXPIRE', H, keep)
    redis.call('PEXPIRE', M, keep)
  else
    redis.call('DEL', H)
    redis.call('DEL', M)
  end
end

-- Keeps the line's keys alive as long as its last waiter's deadline.
local function expire_line(now)
  local last = redis.call('ZRANGE', S, -1, -1, 'WITHSCORES')
  if last[2] then
    local keep = tonumber(last[2]) - now + ${KEY_SLACK_MS}
    local until_ = tonumber(redis.call('HGET', R, 'until') or '0')
    if until_ - now + ${KEY_SLACK_MS} > keep then keep = until_ - now + ${KEY_SLACK_MS} end
    redis.call('PEXPIRE', Q, keep)
    redis.call('PEXPIRE', S, keep)
    redis.call('PEXPIRE', QM, keep)
    redis.call('PEXPIRE', R, keep)
    redis.call('PEXPIRE', N, keep)
  else
    redis.call('DEL', Q, S, QM, R, N)
  end
end

-- The head's id when it may take a slot now (the room is reserved for it), else false.
local function settle_head(now, limit)
  while true do
    local first = redis.call('ZRANGE', Q, 0, 0)
    local head = first[1]
    if not head then
      redis.call('DEL', R)
      return false
    end
    local w, cw = string.match(redis.call('HGET', QM, head) or '1,0', '^(%d+),(%d+)$')
    if used() + tonumber(w) > limit then
      redis.call('DEL', R)
      return false
    end
    if redis.call('HGET', R, 'id') ~= head then
      redis.call('HSET', R, 'id', head, 'until', now + tonumber(cw))
      return head
    end
    if tonumber(redis.call('HGET', R, 'until')) > now then return head end
    remove_waiter(head) -- did not claim within its window: skip it
  end
end

-- Tells waiting processes the head may retry (best effort).
local function wake(channel)
  local first = redis.call('ZRANGE', Q, 0, 0)
  if first[1] then redis.call('PUBLISH', channel, first[1]) end
end
`

/**
 * ARGV: token, limit, ttl, weight, queued (0/1), idleTimeout, claimWindow, maxLength,
 * randomScore ('' for fifo), mayAdmit (0/1), channel.
 * Returns {1, fence, expiresAt, now} | {0, now, nextExpiry} | {2, position, waiting, now, nextExpiry,
 * admitted, windowMs} | {3, waiting, now} | {4, now}.
 */
export const ACQUIRE = `${PRELUDE}
local token, limit, ttl, weight = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local queued = ARGV[5] == '1'
local idle, claim, maxlen = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local score, may_admit, channel = ARGV[9], ARGV[10] == '1', ARGV[11]
local now = now_ms()
purge_holders(now)
purge_waiters(now)

local held = redis.call('ZSCORE', H, token)
if held then
  local _, fence = meta_of(token)
  return {1, fence, tonumber(held), now}
end

-- from_line: the head of the line takes its slot. Only those admissions are recorded for the ETA:
-- they measure how fast the line moves (direct admissions while nobody waits measure arrivals).
local function admit(from_line)
  local fence = redis.call('INCR', F)
  redis.call('PEXPIRE', F, ${FENCE_KEEP_MS})
  local exp = now + ttl
  redis.call('ZADD', H, exp, token)
  redis.call('HSET', M, token, weight .. ',' .. fence)
  set_used(used() + weight)
  expire_holders(now)
  if from_line then
    redis.call('ZADD', A, now, token)
    redis.call('ZREMRANGEBYSCORE', A, '-inf', now - ${ADMISSION_WINDOW_MS})
    redis.call('PEXPIRE', A, ${ADMISSION_WINDOW_MS + KEY_SLACK_MS})
  end
  return {1, fence, exp, now}
end

local function in_line(id)
  local rank = redis.call('ZRANK', Q, id)
  redis.call('ZREMRANGEBYSCORE', A, '-inf', now - ${ADMISSION_WINDOW_MS})
  local first = redis.call('ZRANGE', A, 0, 0, 'WITHSCORES')
  local window = 0
  if first[2] then window = now - tonumber(first[2]) end
  expire_line(now)
  return {2, rank + 1, redis.call('ZCARD', Q), now, next_expiry(), redis.call('ZCARD', A), window}
end

local mine = redis.call('ZSCORE', Q, token)
if mine and queued then redis.call('ZADD', S, now + idle, token) end
local head = settle_head(now, limit)
-- settle_head may have just skipped the caller itself (its claim window ran out): it is no longer in
-- line, and is treated as a newcomer (a poll reads absent).
if mine and not redis.call('ZSCORE', Q, token) then mine = false end
local length = redis.call('ZCARD', Q)

if length == 0 then
  if may_admit and used() + weight <= limit then return admit(false) end
elseif head == token and may_admit then
  remove_waiter(token)
  local result = admit(true)
  settle_head(now, limit)
  expire_line(now)
  wake(channel)
  return result
end

if mine then return in_line(token) end
if not queued then return {0, now, next_expiry()} end
if not may_admit then return {4, now} end
if maxlen > 0 and length >= maxlen then return {3, length, now} end
if score == '' then score = redis.call('INCR', N) end
redis.call('ZADD', Q, score, token)
redis.call('ZADD', S, now + idle, token)
redis.call('HSET', QM, token, weight .. ',' .. claim)
return in_line(token)
`

/** ARGV: token, ttl. Returns {1, expiresAt, fence} | {0}. */
export const REFRESH = `${PRELUDE}
local token, ttl = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local exp = redis.call('ZSCORE', H, token)
if not exp or tonumber(exp) <= now then return {0} end
redis.call('ZADD', H, 'XX', now + ttl, token)
expire_holders(now)
local _, fence = meta_of(token)
return {1, now + ttl, fence}
`

/** ARGV: token, channel. Returns 1 when a live slot was released, else 0. */
export const RELEASE = `${PRELUDE}
local token, channel = ARGV[1], ARGV[2]
local now = now_ms()
local exp = redis.call('ZSCORE', H, token)
if not exp or tonumber(exp) <= now then
  purge_holders(now)
  return 0
end
local w = meta_of(token)
redis.call('ZREM', H, token)
redis.call('HDEL', M, token)
set_used(used() - w)
purge_holders(now)
expire_holders(now)
redis.call('ZADD', X, now, token)
redis.call('ZREMRANGEBYSCORE', X, '-inf', now - ${RELEASED_KEEP_MS})
redis.call('ZREMRANGEBYRANK', X, 0, -${RELEASED_MEMORY + 1})
redis.call('PEXPIRE', X, ${RELEASED_KEEP_MS})
wake(channel)
return 1
`

/** ARGV: token, channel. Returns 1 when the token left the line, else 0. */
export const LEAVE = `${PRELUDE}
local token, channel = ARGV[1], ARGV[2]
local now = now_ms()
local first = redis.call('ZRANGE', Q, 0, 0)
if not redis.call('ZSCORE', Q, token) then return 0 end
remove_waiter(token)
expire_line(now)
if first[1] == token then wake(channel) end
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
purge_holders(now)
purge_waiters(now)
expire_holders(now)
expire_line(now)
return {used(), redis.call('ZCARD', Q)}
`

/** ARGV: channel. Returns how many slots were dropped. */
export const FORCE_RELEASE_ALL = `${PRELUDE}
local channel = ARGV[1]
local now = now_ms()
purge_holders(now)
local tokens = redis.call('ZRANGE', H, 0, -1)
for i = 1, #tokens do redis.call('ZADD', X, now, tokens[i]) end
if #tokens > 0 then
  redis.call('ZREMRANGEBYRANK', X, 0, -${RELEASED_MEMORY + 1})
  redis.call('PEXPIRE', X, ${RELEASED_KEEP_MS})
end
redis.call('DEL', H, M)
wake(channel)
return #tokens
`
