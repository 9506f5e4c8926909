-- admitted: what the durable copy says an occurrence admitted, put back (a rebuild, or the
-- log consumer after the submit path: idempotent). Keys as admit.lua.
--
-- ARGV[1] = how many joined players follow; then those players; then (player, run id)
-- pairs of counted runs. A run's count is added once, whoever puts it back.

local joined = tonumber(ARGV[1])
for i = 2, 1 + joined do redis.call('SADD', KEYS[1], ARGV[i]) end
for i = 2 + joined, #ARGV, 2 do
  redis.call('SADD', KEYS[1], ARGV[i])
  if redis.call('SADD', KEYS[2], ARGV[i] .. '|' .. ARGV[i + 1]) == 1 then
    redis.call('HINCRBY', KEYS[3], ARGV[i], 1)
  end
end
return 1
