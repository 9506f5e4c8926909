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
for i = 1, #ARGV do
  local member, composite, achieved = locate(KEYS[1], KEYS[1], ARGV[i])
  if composite then
    out[#out + 1] = string.format('%.0f', composite)
    out[#out + 1] = redis.call('ZREVRANK', KEYS[1], member)
    out[#out + 1] = achieved
  else
    out[#out + 1] = false
    out[#out + 1] = false
    out[#out + 1] = false
  end
end
return out
