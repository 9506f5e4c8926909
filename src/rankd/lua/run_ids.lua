-- run_ids: the board's first-writer registry of run ids, checked and claimed in one call
-- before the runs are logged (services/run_ids.py), so a run_id resent with other content
-- never enters the log.
--
-- KEYS[1] = the board's armed marker (string): present once the registry is complete
--           for this Redis (restored from PostgreSQL and the log's tail)
-- KEYS[2] = the current time bucket's hash (run_id -> fingerprint), where claims go
-- KEYS[3..] = the older buckets still remembered, newest first
-- ARGV[1] = when the current bucket expires (unix seconds)
-- ARGV[2..] = five values per run: run_id, player_id, score, ended_at ms, given (1 when
--             the client sent ended_at, 0 when it defaulted to the receipt time)
--
-- A fingerprint is "<player>\t<score>\t<ended ms>\t<given>". A run whose id is new is
-- claimed with its own; one already remembered conflicts when the player or the score
-- differs, or both sends carried ended_at and they differ.
--
-- Reply: -2 (an integer, not a list) when the marker is missing: nothing was claimed and
-- the caller restores the registry first. Otherwise one integer per run, in order: -1 for
-- a conflict, else the ended_at (ms) the run is logged with: the first send's, so every
-- send of a run id carries the same content (and a defaulted ended_at keeps its first
-- receipt time).

if redis.call('EXISTS', KEYS[1]) == 0 then
  return -2
end
local out = {}
local claimed = false
for i = 2, #ARGV, 5 do
  local run_id, player, score, ended, given =
    ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local found = false
  for k = 2, #KEYS do
    found = redis.call('HGET', KEYS[k], run_id)
    if found then break end
  end
  if not found then
    redis.call('HSET', KEYS[2], run_id, player .. '\t' .. score .. '\t' .. ended .. '\t' .. given)
    claimed = true
    out[#out + 1] = tonumber(ended)
  else
    local p, s, e, g = string.match(found, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$')
    if p ~= player or s ~= score or (g == '1' and given == '1' and e ~= ended) then
      out[#out + 1] = -1
    else
      out[#out + 1] = tonumber(e)
    end
  end
end
if claimed then
  redis.call('EXPIREAT', KEYS[2], ARGV[1])
end
return out
