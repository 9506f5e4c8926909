-- segment_values: bound the distinct values of each segment dimension of a board, in one
-- call per submit (services/segment_values.py). Every new value makes standings keys in
-- every window, so a client sending unique values could grow Redis without end.
--
-- KEYS[i] = the board's set of values seen for dimension i (same hash tag), holding the
--           member "" as its marker: present once counted for this Redis
-- ARGV[1] = the most distinct values a dimension may have
-- ARGV[2..] = per run: n, then n pairs (dimension index into KEYS, value)
--
-- Reply: -2 (an integer) when a set lacks its marker: nothing was added and the caller
-- restores the sets from PostgreSQL first. Otherwise one integer per run: 1 when its
-- values are known or fit (they are added), 0 when one would pass the bound (none of the
-- run's values are added).

for i = 1, #KEYS do
  if redis.call('SISMEMBER', KEYS[i], '') == 0 then
    return -2
  end
end
local most = tonumber(ARGV[1])
local out = {}
local i = 2
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local fresh = {}
  local fits = 1
  for k = 0, n - 1 do
    local key = KEYS[tonumber(ARGV[i + 1 + 2 * k])]
    local value = ARGV[i + 2 + 2 * k]
    if redis.call('SISMEMBER', key, value) == 0 then
      -- the marker is one member: a dimension holds SCARD - 1 values
      if redis.call('SCARD', key) - 1 >= most then
        fits = 0
      else
        fresh[#fresh + 1] = {key, value}
      end
    end
  end
  if fits == 1 then
    for _, kv in ipairs(fresh) do
      redis.call('SADD', kv[1], kv[2])
    end
  end
  out[#out + 1] = fits
  i = i + 1 + 2 * n
end
return out
