-- friends: score, rank and exact time of each listed player in one call (up to 1001 ids).
--
-- KEYS[1] = the public board of one period
-- ARGV    = player ids
--
-- Returns a flat list {score_1, rank0_1, time_1, score_2, ...}; a player without an entry
-- gives {false, false, false} (nil bulk replies), a time not recorded 0. One script call
-- costs the client one command instead of one ZREVRANK per friend.

-- see lib.lua, loaded before this.

local out = {}
for i = 1, #ARGV do append_entry(out, KEYS[1], ARGV[i]) end
return out
