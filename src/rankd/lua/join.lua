-- join: a player joins a scheduled board's occurrence, unless it is full, atomically.
--
-- KEYS[1] = the occurrence's entrants (see admit.lua)
-- ARGV[1] = player id; ARGV[2] = the most entrants (0: any)
--
-- Returns "joined" (now or before: joining again is harmless) or "full".

if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 'joined' end
local cap = tonumber(ARGV[2])
if cap > 0 and redis.call('SCARD', KEYS[1]) >= cap then return 'full' end
redis.call('SADD', KEYS[1], ARGV[1])
return 'joined'
