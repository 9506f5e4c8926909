-- friends: score, rank and exact time of each listed player in one call (up to 1001 ids).
--
-- KEYS[1] = the public board of one period
-- ARGV    = player ids
--
-- Returns a flat list {score_1, rank0_1, time_1, score_2, ...}; a player without an entry
-- gives {false, false, false} (nil bulk replies), a time not recorded 0. One script call
-- costs the client one command instead of one ZREVRANK per friend.

-- at_key, rank_in, with_times: see lib.lua, loaded before this.

local out = {}
for i = 1, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score then
    out[#out + 1] = score
    out[#out + 1] = redis.call('ZREVRANK', KEYS[1], ARGV[i])
    out[#out + 1] = tonumber(redis.call('HGET', at_key(KEYS[1], ARGV[i]), ARGV[i]) or '0')
  else
    out[#out + 1] = false
    out[#out + 1] = false
    out[#out + 1] = false
  end
end
return out
