-- Extension 0003 retry budget, shared: the TokenBucket of openarmature-pipeline run
-- atomically on one hash. KEYS[1] the hash; ARGV: op (deposit | withdraw | snapshot),
-- ratio, floor, floor_window_ms, max_tokens, ttl_ms. Time is the server's.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local k = KEYS[1]
local op = ARGV[1]
local ratio, floor, win, maxt = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local h = redis.call('HMGET', k, 'tokens', 'window', 'floor_used', 'first_attempts', 'retries', 'denied')
local tokens = tonumber(h[1] or '0')
if op == 'snapshot' then
  return {tostring(tokens), tonumber(h[4] or '0'), tonumber(h[5] or '0'), tonumber(h[6] or '0')}
end
if op == 'deposit' then
  tokens = math.min(tokens + math.max(ratio, 0), math.max(maxt, 0))
  redis.call('HSET', k, 'tokens', tostring(tokens))
  redis.call('HINCRBY', k, 'first_attempts', 1)
  redis.call('PEXPIRE', k, ARGV[6])
  return 1
end
local window = math.floor(now / math.max(win, 1))
local used = 0
if tonumber(h[2] or '-1') == window then used = tonumber(h[3] or '0') end
local granted = 0
if tokens >= 1 - 1e-9 then
  tokens = math.max(tokens - 1, 0)
  granted = 1
elseif used < floor then
  used = used + 1
  granted = 1
end
redis.call('HSET', k, 'tokens', tostring(tokens), 'window', window, 'floor_used', used)
if granted == 1 then
  redis.call('HINCRBY', k, 'retries', 1)
else
  redis.call('HINCRBY', k, 'denied', 1)
end
redis.call('PEXPIRE', k, ARGV[6])
return granted
