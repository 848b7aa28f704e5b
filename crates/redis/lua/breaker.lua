-- Extension 0004 circuit breaker, shared: the BreakerMachine of openarmature-llm run
-- atomically on one hash. KEYS[1] the hash; ARGV: op (acquire | record | release |
-- state), consecutive_failures, failure_rate, window, min_calls, cooldown_ms,
-- half_open_probes, probes_to_close, probe (0/1), failed (0/1), ttl_ms.
-- Returns {admitted, probe, retry_in_ms, from, to, reason, state}. Server time.
-- A half-open probe slot taken more than twice the cooldown ago and never given back
-- (its process died, or its outcome could not be recorded) is presumed lost and freed:
-- without that, leaked slots would keep the breaker half-open and refusing for good.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local k = KEYS[1]
local op = ARGV[1]
local cf, rate, win, minc = tonumber(ARGV[2]), tonumber(ARGV[3]), math.max(tonumber(ARGV[4]), 1), math.max(tonumber(ARGV[5]), 1)
local cool, hop, ptc = tonumber(ARGV[6]), math.max(tonumber(ARGV[7]), 1), math.max(tonumber(ARGV[8]), 1)
local probe, failed, ttl = ARGV[9] == '1', ARGV[10] == '1', ARGV[11]
local h = redis.call('HMGET', k, 'state', 'consecutive', 'outcomes', 'opened_at', 'probes', 'probe_successes', 'probe_at')
local st = h[1] or 'closed'
local cons = tonumber(h[2] or '0')
local outs = h[3] or ''
local opened = tonumber(h[4] or '0')
local probes = tonumber(h[5] or '0')
local ps = tonumber(h[6] or '0')
local pat = tonumber(h[7] or '0')
local tf, tt, tr = '', '', ''
local function go(to, reason)
  tf, tt, tr = st, to, reason
  st = to
  probes, ps, pat = 0, 0, 0
  if to == 'open' then opened = now elseif to == 'closed' then cons, outs = 0, '' end
end
local function save()
  redis.call('HSET', k, 'state', st, 'consecutive', cons, 'outcomes', outs, 'opened_at', opened, 'probes', probes, 'probe_successes', ps, 'probe_at', pat)
  redis.call('PEXPIRE', k, ttl)
end
if op == 'acquire' then
  if st == 'open' then
    if now < opened + cool then return {0, 0, opened + cool - now, '', '', '', st} end
    go('half_open', 'cooldown_elapsed')
  end
  local admitted, isprobe = 1, 0
  if st ~= 'closed' then
    if probes >= hop and now - pat > 2 * cool then probes = 0 end
    if probes < hop then probes = probes + 1; isprobe = 1; pat = now else admitted = 0 end
  end
  save()
  return {admitted, isprobe, 0, tf, tt, tr, st}
elseif op == 'record' then
  if probe then
    probes = math.max(probes - 1, 0)
    if st == 'half_open' then
      if failed then
        go('open', 'probe_failed')
      else
        ps = ps + 1
        if ps >= ptc then go('closed', 'probe_succeeded') end
      end
    end
  elseif st == 'closed' then
    if failed then cons = cons + 1 else cons = 0 end
    outs = outs .. (failed and '1' or '0')
    if #outs > win then outs = string.sub(outs, #outs - win + 1) end
    if cf > 0 and cons >= cf then
      go('open', 'consecutive_failures')
    else
      local n = #outs
      if n >= minc then
        local _, f = string.gsub(outs, '1', '')
        if f / n >= rate then go('open', 'failure_rate') end
      end
    end
  end
  save()
  return {0, 0, 0, tf, tt, tr, st}
elseif op == 'release' then
  if probe then probes = math.max(probes - 1, 0) end
  save()
  return {0, 0, 0, '', '', '', st}
end
local rem = 0
if st == 'open' and now < opened + cool then rem = opened + cool - now end
return {0, 0, rem, '', '', '', st}
