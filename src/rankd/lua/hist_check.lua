-- hist_check: recount one shard's score histogram from its standings and put right any
-- bucket that drifted (a write that moved an entry without counting it); the histogram's
-- change counter ('#') is kept, so readers' change rates stay whole.
--
-- KEYS[1] = one shard's public board
-- KEYS[2] = its histogram (KEYS[1] .. ':hist', same hash tag)
-- ARGV: none
--
-- Returns the drift found: the sum over buckets of |held - true|. Walks the populated
-- buckets from the top as hist_rebuild.lua does (one ZCOUNT and one ZREVRANGEBYSCORE ...
-- LIMIT 0 1 each), so a shard of millions costs a few thousand steps; atomic, so no write
-- lands between the count and the repair.

-- see lib.lua, loaded before this.

local truth, counted = {}, 0
local top = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
while top[1] do
  local b = hist_bucket(tonumber(top[2]))
  local lo = string.format('%.0f', hist_floor(b))
  local n = redis.call('ZCOUNT', KEYS[1], lo, '+inf')
  truth[string.format('%d', b)] = n - counted
  counted = n
  top = redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. lo, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
end

local drift = 0
local held = redis.call('HGETALL', KEYS[2])
for i = 1, #held, 2 do
  local field, value = held[i], tonumber(held[i + 1])
  if field ~= '#' then
    local want = truth[field] or 0
    if value ~= want then
      drift = drift + math.abs(value - want)
      if want == 0 then
        redis.call('HDEL', KEYS[2], field)
      else
        redis.call('HSET', KEYS[2], field, want)
      end
    end
    truth[field] = nil
  end
end
for field, want in pairs(truth) do  -- buckets the histogram lacks
  drift = drift + want
  redis.call('HSET', KEYS[2], field, want)
end
return drift
