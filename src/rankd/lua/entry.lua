-- entry: one player's entry in a board period, in one atomic read.
--
-- KEYS[1] = the public board of one period
-- ARGV[1] = player id
--
-- Returns {total} when the player has no entry, else {total, composite, rank0, achieved}:
-- the period's total, the entry's composite, its 0-based rank and the exact time (ms, 0:
-- not recorded). One command instead of a pipeline of four: the client's cost per command
-- was most of a rank read.

-- see lib.lua, loaded before this.

local total = redis.call('ZCARD', KEYS[1])
local member, composite, achieved = locate(KEYS[1], KEYS[1], ARGV[1])
if not composite then
  return {total}
end
return {total, composite, redis.call('ZREVRANK', KEYS[1], member), achieved}
