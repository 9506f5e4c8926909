-- around: a player's rank and the entries directly above and below, in one atomic read.
--
-- KEYS[1] = the public board of one period
-- ARGV[1] = player id
-- ARGV[2] = how many entries to take on each side
--
-- Returns {-1} when the player has no entry, else {first_rank0, total, slice} where slice is
-- a flat player id, score, exact time (ms, 0: not recorded) list from first_rank0 on.

-- see lib.lua, loaded before this.

local member, composite = locate(KEYS[1], KEYS[1], ARGV[1])
if not composite then
  return {-1}
end
local r = redis.call('ZREVRANK', KEYS[1], member)
local n = tonumber(ARGV[2])
local first = r - n
if first < 0 then first = 0 end
local slice = redis.call('ZREVRANGE', KEYS[1], first, r + n, 'WITHSCORES')
return {first, redis.call('ZCARD', KEYS[1]), with_times(slice)}
