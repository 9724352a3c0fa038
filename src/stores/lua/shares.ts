/**
 * The client shares' Lua functions (`AcquireRequest.client`): each client's record in `:cs`, its
 * tokens in `:ct`, the sweep of records due in `:cx` (see keys.ts). Part of the prelude every
 * script shares (prelude.ts), placed after the functions they call.
 */
import { KEY_SLACK_MS } from './keys.js'

/** A client's record lives at least this long after its last grant (the rate's minute). */
export const SHARE_KEEP_MS = 60_000

export const SHARE_FUNCTIONS = `
-- A client's record: its rate's theoretical arrival time and the tokens that still hold something
-- (a live slot not yet refreshed, or a place in line) but except; the others are dropped from :ct
-- here (the record itself is rewritten by share_store). Returns tat, the live tokens, how many are slots.
local function share_load(now, client, except)
  local rec = redis.call('HGET', CS, client)
  local tat, live, slots = 0, {}, 0
  if not rec then return tat, live, slots end
  local first = true
  for part in string.gmatch(rec, '[^|]+') do
    if first then
      tat = tonumber(part)
      first = false
    elseif part ~= except then
      local exp = redis.call('ZSCORE', H, part)
      if exp and tonumber(exp) > now then
        live[#live + 1] = part
        slots = slots + 1
      elseif redis.call('ZSCORE', Q, part) then
        live[#live + 1] = part
      else
        redis.call('HDEL', CT, part)
      end
    end
  end
  return tat, live, slots
end

-- Writes a client's record (or removes it once it holds nothing and owes the rate nothing).
local function share_store(now, client, tat, live, keep)
  if #live == 0 and tat <= now then
    redis.call('HDEL', CS, client)
    redis.call('ZREM', CX, client)
    return
  end
  redis.call('HSET', CS, client, string.format('%.3f', tat) .. '|' .. table.concat(live, '|'))
  redis.call('ZADD', CX, math.max(tat, now + keep), client)
  for _, key in ipairs({CS, CT, CX}) do redis.call('PEXPIRE', key, keep + ${SHARE_KEEP_MS + KEY_SLACK_MS}) end
end

-- True when client may take one more slot or place: under its places, its slots and its rate.
local function share_allows(now, client, places, slots, per_minute)
  local tat, live, held = share_load(now, client)
  if per_minute > 0 and tat - now > (60000 / per_minute) * (per_minute - 1) then return false end
  return #live < places and held < slots
end

-- Counts token, just granted a slot or a place, against client.
local function share_take(now, client, token, per_minute, keep)
  local tat, live = share_load(now, client, token)
  if per_minute > 0 then tat = math.max(tat, now) + 60000 / per_minute end
  live[#live + 1] = token
  redis.call('HSET', CT, token, client)
  share_store(now, client, tat, live, keep)
end

-- token no longer counts against its client (its slot was refreshed: the holder came back).
local function share_drop(now, token)
  local client = redis.call('HGET', CT, token)
  if not client then return end
  redis.call('HDEL', CT, token)
  local tat, live = share_load(now, client, token)
  if #live == 0 and tat <= now then
    redis.call('HDEL', CS, client)
    redis.call('ZREM', CX, client)
  else
    redis.call('HSET', CS, client, string.format('%.3f', tat) .. '|' .. table.concat(live, '|'))
  end
end

-- Looks again at a few records past their time: forgets those that hold nothing, keeps the others.
local function share_sweep(now, keep)
  local due = redis.call('ZRANGEBYSCORE', CX, '-inf', now, 'LIMIT', 0, 8)
  for i = 1, #due do
    local tat, live = share_load(now, due[i])
    share_store(now, due[i], tat, live, keep)
  end
end
`
