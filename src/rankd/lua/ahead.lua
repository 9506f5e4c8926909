-- ahead: on one shard of a sharded board, how many entries rank ahead of given entries, and
-- optionally the entries around the first of them (a merged read's slice from this shard).
--
-- KEYS[1] = one shard's public board
-- ARGV[1] = how many entries to return just ahead of the first (composite, member) pair
-- ARGV[2] = how many entries to return from the first pair's position on (0 and 0: none)
-- ARGV[3], ARGV[4], ... = composite, member pairs (the member as codec.member builds it)
--
-- Returns {total, aheads, first0, slice}:
--   total   the shard's ZCARD
--   aheads  per pair, the entries here that rank ahead of it: a higher composite, or an equal
--           one whose member sorts after it byte by byte (ZREVRANGE's order of equal scores)
--   first0  the 0-based position here of the slice's first entry
--   slice   a flat player id, score, exact time (ms) list from first0 on (see lib.lua)
-- The sum of a pair's aheads over every shard, plus one, is its rank on the whole board:
-- exactly what ZREVRANK answers on one unsharded key holding the same entries.

-- see lib.lua, loaded before this.

local function count_ahead(composite, member)
  local exact = string.format('%.0f', composite)
  local n = redis.call('ZCOUNT', KEYS[1], '(' .. exact, '+inf')
  for _, other in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], exact, exact)) do
    if bytes_after(other, member) then n = n + 1 end
  end
  return n
end

local aheads = {}
for i = 3, #ARGV, 2 do
  aheads[#aheads + 1] = count_ahead(tonumber(ARGV[i]), ARGV[i + 1])
end
local above, below = tonumber(ARGV[1]), tonumber(ARGV[2])
local first, slice = 0, {}
if (above > 0 or below > 0) and #aheads > 0 then
  first = aheads[1] - above
  if first < 0 then first = 0 end
  local last = aheads[1] + below - 1
  if last >= first then
    slice = with_times(redis.call('ZREVRANGE', KEYS[1], first, last, 'WITHSCORES'))
  end
end
return {redis.call('ZCARD', KEYS[1]), aheads, first, slice}
