/**
 * The Redis store's scripts for the fleet's adaptive limit: one instance's window in, the judge's
 * figure out (see `Store.adapt` and `Store.adaptCommit`).
 */
import { script } from './script.js'

/**
 * Adds one instance's window to the fleet's pending one (`:ad` fields `ws`, `wf`, `wr`, and `b<i>`
 * histogram counts, from the REST list of bucket/count pairs; `wi` the most live slots counted at
 * the window's reports). Replies { limit, state }; once per `every` ms the caller is the judge: then
 * also { turn, samples, failures, refused, inside, bucket, count, ... } (the pending window, which
 * starts afresh). When a window is judged: see judgeNow in ../types.ts.
 */
export const ADAPT = script(
  'adapt',
  { samples: 'n', failures: 'n', refused: 'n', initial: 'n', every: 'n', minSamples: 'n' } as const,
  `
local now = now_ms()
local v = redis.call('HMGET', AD, 'l', 'st', 'at', 'turn', 'ws', 'wf', 'wi')
local l = tonumber(v[1] or initial)
local st = v[2] or ''
local pending, failed = tonumber(v[5] or '0') + samples, tonumber(v[6] or '0') + failures
local inside = math.max(tonumber(v[7] or '0'), redis.call('ZCOUNT', H, '(' .. string.format('%.0f', now), '+inf'))
if samples > 0 then redis.call('HINCRBY', AD, 'ws', samples) end
if failures > 0 then redis.call('HINCRBY', AD, 'wf', failures) end
if refused > 0 then redis.call('HINCRBY', AD, 'wr', refused) end
for i = REST, #ARGV, 2 do redis.call('HINCRBY', AD, 'b' .. ARGV[i], ARGV[i + 1]) end
local reply = { l, st }
local age = now - tonumber(v[3] or '-1e15')
if age >= 4 * every or (age >= every and (pending >= minSamples or failed > 0)) then
  local turn = tonumber(v[4] or '0') + 1
  local ws, wf, wr = 0, 0, 0
  local drop = {}
  local all = redis.call('HGETALL', AD)
  local buckets = {}
  for i = 1, #all, 2 do
    local f, n = all[i], all[i + 1]
    if f == 'ws' then ws = tonumber(n) elseif f == 'wf' then wf = tonumber(n) elseif f == 'wr' then wr = tonumber(n)
    elseif string.sub(f, 1, 1) == 'b' then
      buckets[#buckets + 1] = tonumber(string.sub(f, 2))
      buckets[#buckets + 1] = tonumber(n)
      drop[#drop + 1] = f
    end
  end
  drop[#drop + 1] = 'ws'
  drop[#drop + 1] = 'wf'
  drop[#drop + 1] = 'wr'
  drop[#drop + 1] = 'wi'
  redis.call('HDEL', AD, unpack(drop))
  redis.call('HSET', AD, 'at', now, 'turn', turn)
  reply = { l, st, turn, ws, wf, wr, inside }
  for i = 1, #buckets do reply[#reply + 1] = buckets[i] end
end
if #reply == 2 then
  redis.call('HSET', AD, 'l', l, 'wi', inside)
else
  redis.call('HSET', AD, 'l', l)
end
redis.call('PEXPIRE', AD, 3600000)
return reply
`,
)

/** Sets the fleet's adaptive limit (within [min, max]) and the estimator's state if \`turn\` is still the latest judge's. Replies 1 if set, else 0. */
export const ADAPT_COMMIT = script(
  'adaptCommit',
  { turn: 'n', limit: 'n', state: 's', min: 'n', max: 'n' } as const,
  `
if tonumber(redis.call('HGET', AD, 'turn') or '0') ~= turn then return 0 end
redis.call('HSET', AD, 'l', math.min(max, math.max(min, limit)), 'st', state)
redis.call('PEXPIRE', AD, 3600000)
return 1
`,
)
