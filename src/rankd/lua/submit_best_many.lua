-- submit_best_many: submit_best for several runs on one board period, in one call.
--
-- KEYS[1] = the key the entries are written to (public board or a side key)
-- KEYS[2] = the public board the ranks are read from (equal to KEYS[1] for most players)
-- ARGV[1] = unix seconds at which the written key expires, or "0" for never
-- ARGV[2], ARGV[3], ARGV[4], ... = composite, member, exact end time (ms) triples,
--           applied in order
--
-- Returns a flat list of {changed, rank, stored, mine, achieved} per triple, as
-- submit_best.lua does for one. A batch of runs costs the client one command per period
-- instead of one per run.

-- The exact-times hash of a member: <key>:at:<h>, h = its bytes as a big-endian number
-- mod 65521 (stores/redis_keys.py time_bucket computes the same).
local function at_key(key, member)
  local h = 0
  for i = 1, #member do h = (h * 256 + string.byte(member, i)) % 65521 end
  return key .. ':at:' .. h
end

local out = {}
for i = 2, #ARGV, 3 do
  local member = ARGV[i + 1]
  local at = at_key(KEYS[1], member)
  local changed = redis.call('ZADD', KEYS[1], 'GT', 'CH', ARGV[i], member)
  if changed == 1 then
    redis.call('HSET', at, member, ARGV[i + 2])
  end
  if ARGV[1] ~= '0' then
    redis.call('EXPIREAT', at, ARGV[1])
  end
  local stored = redis.call('ZSCORE', KEYS[1], member)
  local rank
  if KEYS[1] == KEYS[2] then
    rank = redis.call('ZREVRANK', KEYS[1], member) + 1
  else
    rank = redis.call('ZCOUNT', KEYS[2], '(' .. stored, '+inf') + 1
  end
  out[#out + 1] = changed
  out[#out + 1] = rank
  out[#out + 1] = tonumber(stored)
  out[#out + 1] = (tonumber(stored) == tonumber(ARGV[i])) and 1 or 0
  out[#out + 1] = tonumber(redis.call('HGET', at, member) or '0')
end
if ARGV[1] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[1])
end
return out
