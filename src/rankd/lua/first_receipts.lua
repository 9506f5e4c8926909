-- first_receipts: when each run sent without ended_at was first received, in one call.
--
-- KEYS[1] = the board's first-receipt set (sorted set: "<player>|<run_id>" -> receipt ms)
-- ARGV[1] = now (ms): this sending's receipt time
-- ARGV[2] = forget receipts older than this (ms)
-- ARGV[3..] = "<player>|<run_id>" of each run
--
-- Returns the first receipt time (ms) of each run: this sending's for a run not seen within
-- the window. The set holds only the window's receipts, which bounds it.

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])
local out = {}
for i = 3, #ARGV do
  redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[i])
  out[#out + 1] = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[i]))
end
return out
