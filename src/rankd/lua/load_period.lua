-- load_period: put a small period in place whole, in one atomic step (the batched rebuild,
-- services/rebuild/): one reply per period instead of a staging load, a MULTI/EXEC swap
-- and their replies. Readers see the old board or the new one, never half of it.
--
-- KEYS[1] = the period's public board, KEYS[2] = its :pending key, KEYS[3] = its :applied
--           marks (both dropped: the marks go with the board they were made on)
-- ARGV[1] = n, the entries; ARGV[2 .. 1 + 2n] = (composite, member) pairs
-- then groups of exact times, each: bucket, f, then f (member, achieved ms) pairs (the
-- hash KEYS[1]:at:<bucket>, as at_key in lib.lua names it; fields are added, not reset)
--
-- Returns n.

local CHUNK = 2000 -- values per command: unpack has a stack limit

local function in_chunks(command, key, first, last)
  local i = first
  while i <= last do
    local stop = math.min(i + CHUNK - 1, last) -- CHUNK is even: pairs stay whole
    redis.call(command, key, unpack(ARGV, i, stop))
    i = stop + 1
  end
end

-- a rebuild that died midway may have left the period torn (stores/redis/leases.py): this
-- whole rewrite mends it, so the mark and any lapsed lease go with the old board
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[1] .. ':torn', KEYS[1] .. ':restoring')
local n = tonumber(ARGV[1])
in_chunks('ZADD', KEYS[1], 2, 1 + 2 * n)
local i = 2 + 2 * n
while i <= #ARGV do
  local f = tonumber(ARGV[i + 1])
  in_chunks('HSET', KEYS[1] .. ':at:' .. ARGV[i], i + 2, i + 1 + 2 * f)
  i = i + 2 + 2 * f
end
return n
