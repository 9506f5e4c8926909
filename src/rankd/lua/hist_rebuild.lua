-- hist_rebuild: count a sharded board's public key into its score histogram from scratch
-- (after a rebuild swapped the key in; submits keep it up to date from then on).
--
-- KEYS[1] = one shard's public board
-- KEYS[2] = its histogram (KEYS[1] .. ':hist', same hash tag)
-- ARGV: none
--
-- Returns the number of buckets written. Walks the populated buckets from the top: one
-- ZCOUNT and one ZREVRANGEBYSCORE ... LIMIT 0 1 each, O(log n) apiece, so a shard of
-- millions costs a few thousand steps (at most 11,776 buckets), not a scan of its members.

-- see lib.lua, loaded before this.

redis.call('DEL', KEYS[2])
local written, counted = 0, 0
local top = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
while top[1] do
  local b = hist_bucket(tonumber(top[2]))
  local lo = string.format('%.0f', hist_floor(b))
  local n = redis.call('ZCOUNT', KEYS[1], lo, '+inf')
  redis.call('HSET', KEYS[2], string.format('%d', b), n - counted)
  counted, written = n, written + 1
  top = redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. lo, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
end
redis.call('HSET', KEYS[2], '#', 0)
return written
