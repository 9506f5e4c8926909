-- top: a slice of a board period by rank, with exact times, and the period's total.
--
-- KEYS[1] = the public board of one period
-- ARGV[1] = first rank (0-based)
-- ARGV[2] = last rank (0-based, inclusive)
--
-- Returns {total, slice}: slice is a flat member, score, exact time (ms, 0: not recorded)
-- list, best first.

-- The exact-times hash of a member: <key>:at:<h>, h = its bytes as a big-endian number
-- mod 65521 (stores/redis_keys.py time_bucket computes the same).
local function at_key(key, member)
  local h = 0
  for i = 1, #member do h = (h * 256 + string.byte(member, i)) % 65521 end
  return key .. ':at:' .. h
end

local slice = redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES')
local out = {}
for i = 1, #slice, 2 do
  out[#out + 1] = slice[i]
  out[#out + 1] = slice[i + 1]
  out[#out + 1] = tonumber(redis.call('HGET', at_key(KEYS[1], slice[i]), slice[i]) or '0')
end
return {redis.call('ZCARD', KEYS[1]), out}
