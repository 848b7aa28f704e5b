-- Requests- and tokens-per-window limiter, shared: a sliding log of reservations.
-- KEYS[1] a sorted set (reservation id -> admission time, ms), KEYS[2] a hash
-- (reservation id -> tokens). ARGV: op (acquire | reconcile), id, tokens,
-- max_requests (0: none), max_tokens (0: none), window_ms.
-- acquire returns {admitted, wait_ms, requests_in_window, tokens_in_window}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local z, h, op, id = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
if op == 'reconcile' then
  if redis.call('ZSCORE', z, id) then
    redis.call('HSET', h, id, ARGV[3])
    return {1, 0, 0, 0}
  end
  return {0, 0, 0, 0}
end
local est, maxr, maxt, win = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
-- Runs `cmd` on `key` with `list` as its arguments, 1000 at a time (Lua's unpack stops at
-- a few thousand values: a busy window holds more reservations); returns the replies
-- joined in order.
local function chunked(cmd, key, list)
  local out = {}
  for i = 1, #list, 1000 do
    local part = redis.call(cmd, key, unpack(list, i, math.min(i + 999, #list)))
    if type(part) == 'table' then
      for j = 1, #part do out[i + j - 1] = part[j] end
    end
  end
  return out
end
local old = redis.call('ZRANGEBYSCORE', z, '-inf', now - win)
if #old > 0 then
  redis.call('ZREMRANGEBYSCORE', z, '-inf', now - win)
  chunked('HDEL', h, old)
end
local live = redis.call('ZRANGE', z, 0, -1, 'WITHSCORES')
local n = #live / 2
local used, toks = 0, {}
if maxt > 0 and n > 0 then
  local ids = {}
  for i = 1, #live, 2 do ids[#ids + 1] = live[i] end
  local vals = chunked('HMGET', h, ids)
  for i = 1, n do
    local x = tonumber(vals[i] or '0') or 0
    toks[i] = x
    used = used + x
  end
end
local wait = 0
if maxr > 0 and n + 1 > maxr then
  wait = math.max(wait, tonumber(live[(n + 1 - maxr) * 2]) + win - now)
end
if maxt > 0 and n > 0 and used + est > maxt then
  local need, freed, at = used + est - maxt, 0, tonumber(live[n * 2])
  for i = 1, n do
    freed = freed + toks[i]
    if freed >= need then at = tonumber(live[i * 2]); break end
  end
  wait = math.max(wait, at + win - now)
end
if wait > 0 then return {0, wait, n, used} end
redis.call('ZADD', z, now, id)
redis.call('HSET', h, id, est)
redis.call('PEXPIRE', z, win * 2)
redis.call('PEXPIRE', h, win * 2)
return {1, 0, n + 1, used + est}
