-- rate_limit: ``cost`` requests of one identity (a bearer key or a client address) through
-- GCRA, the generic cell rate algorithm, in one call: all of them or none.
--
-- KEYS[1] = the identity's key (a string: its theoretical arrival time, µs since the epoch)
-- ARGV[1] = emission interval (µs, integer >= 1): 1e6 / the rate per second, rounded up
-- ARGV[2] = burst (integer >= 1): requests an idle identity may make at once
-- ARGV[3] = cost (integer 1..burst): how many requests this call takes (a process leases
--           several at once, see services/rate_limits.py)
-- ARGV[4] = now (µs), for tests only; without it Redis's own clock (TIME) decides, so
--           instances whose clocks disagree still share one count
--
-- Returns {1, 0} when they are allowed, else {0, wait}: the µs until they would be.
--
-- Over any span of w µs an identity is allowed at most burst + w / interval requests. The
-- key expires once the identity is idle again (at its arrival time), so Redis holds one key
-- per identity seen in the last burst * interval µs and nothing older.

local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now
if ARGV[4] then
  now = tonumber(ARGV[4])
else
  -- TIME is not deterministic: replicate the SET's effect, not the script (a no-op on
  -- Redis 5+, where that is the default; needed on older ones)
  redis.replicate_commands()
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
local next_tat = tat + cost * interval
local allowed_at = next_tat - burst * interval
if now < allowed_at then
  return {0, allowed_at - now}
end
-- '%.0f': tostring would print a number this large in exponent form and lose digits
redis.call('SET', KEYS[1], string.format('%.0f', next_tat),
  'PX', math.ceil((next_tat - now) / 1000))
return {1, 0}
