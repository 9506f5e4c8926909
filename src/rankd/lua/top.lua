-- top: a slice of a board period by rank, with exact times, and the period's total.
--
-- KEYS[1] = the public board of one period
-- ARGV[1] = first rank (0-based)
-- ARGV[2] = last rank (0-based, inclusive)
--
-- Returns {total, slice}: slice is a flat player id, score, exact time (ms, 0: not
-- recorded) list, best first. The ids and times come out of the members (see lib.lua), so
-- a top read touches no other key.

-- see lib.lua, loaded before this.

local slice = redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES')
return {redis.call('ZCARD', KEYS[1]), with_times(slice)}
