-- friends: score and rank of each listed player in one call (a group of up to 1001 ids).
--
-- KEYS[1] = the public board of one period
-- ARGV    = player ids
--
-- Returns a flat list {score_1, rank0_1, score_2, rank0_2, ...}; a player without an
-- entry gives {false, false} (nil bulk replies). One script call costs the client one
-- command instead of one ZREVRANK per friend.

local out = {}
for i = 1, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score then
    out[#out + 1] = score
    out[#out + 1] = redis.call('ZREVRANK', KEYS[1], ARGV[i])
  else
    out[#out + 1] = false
    out[#out + 1] = false
  end
end
return out
