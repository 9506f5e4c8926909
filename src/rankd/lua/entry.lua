-- entry: one player's entry in a board period, in one atomic read.
--
-- KEYS[1] = the public board of one period
-- ARGV[1] = member (player id)
--
-- Returns {total} when the player has no entry, else {total, composite, rank0, achieved}:
-- the period's total, the entry's composite, its 0-based rank and the exact time (ms, 0:
-- not recorded). One command instead of a pipeline of four: the client's cost per command
-- was most of a rank read.

-- at_key, rank_in, with_times: see lib.lua, loaded before this.

local total = redis.call('ZCARD', KEYS[1])
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then
  return {total}
end
local achieved = tonumber(redis.call('HGET', at_key(KEYS[1], ARGV[1]), ARGV[1]) or '0')
return {total, score, redis.call('ZREVRANK', KEYS[1], ARGV[1]), achieved}
