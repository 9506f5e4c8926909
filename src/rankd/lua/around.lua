-- around: a player's rank and the entries directly above and below, in one atomic read.
--
-- KEYS[1] = the public board of one period
-- ARGV[1] = member (player id)
-- ARGV[2] = how many entries to take on each side
--
-- Returns {-1} when the player has no entry, else {first_rank0, total, slice} where slice is
-- a flat member, score, exact time (ms, 0: not recorded) list from first_rank0 on.

-- The exact-times hash of a member: <key>:at:<h>, h = its bytes as a big-endian number
-- mod 65521 (stores/redis_keys.py time_bucket computes the same).
local function at_key(key, member)
  local h = 0
  for i = 1, #member do h = (h * 256 + string.byte(member, i)) % 65521 end
  return key .. ':at:' .. h
end

local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not r then
  return {-1}
end
local n = tonumber(ARGV[2])
local first = r - n
if first < 0 then first = 0 end
local slice = redis.call('ZREVRANGE', KEYS[1], first, r + n, 'WITHSCORES')
local out = {}
for i = 1, #slice, 2 do
  out[#out + 1] = slice[i]
  out[#out + 1] = slice[i + 1]
  out[#out + 1] = tonumber(redis.call('HGET', at_key(KEYS[1], slice[i]), slice[i]) or '0')
end
return {first, redis.call('ZCARD', KEYS[1]), out}
