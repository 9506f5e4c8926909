-- admit: decide, before a scheduled board's runs are logged, which of them its occurrence
-- counts (services/tournaments.py), atomically against joins and other runs.
--
-- KEYS[1] = the occurrence's entrants (a set of player ids: joined, or counted a run)
-- KEYS[2] = its counted runs ("<player>|<run_id>")
-- KEYS[3] = its counted runs per player (a hash)
-- ARGV[1] = "1" if runs count only for players who joined, else "0"
-- ARGV[2] = the most entrants (0: any); ARGV[3] = the most counted runs a player (0: any)
-- ARGV[4], ARGV[5], ... = (player, run id) pairs, decided in order
--
-- Returns one status per pair: "ok" (counted before: a resend of a counted run uses no
-- attempt), "counted" (counted now), "entered" (counted now, its player an entrant since),
-- "not_joined", "full" or "attempts_exhausted" (nothing written).

local need_join = ARGV[1] == '1'
local cap, most = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i = 4, #ARGV, 2 do
  local player = ARGV[i]
  local try = player .. '|' .. ARGV[i + 1]
  local status = 'ok'
  if redis.call('SISMEMBER', KEYS[2], try) == 0 then
    local entrant = redis.call('SISMEMBER', KEYS[1], player) == 1
    if need_join and not entrant then
      status = 'not_joined'
    elseif (not entrant) and cap > 0 and redis.call('SCARD', KEYS[1]) >= cap then
      status = 'full'
    elseif most > 0 and tonumber(redis.call('HGET', KEYS[3], player) or '0') >= most then
      status = 'attempts_exhausted'
    else
      status = 'counted'
      if redis.call('SADD', KEYS[1], player) == 1 then status = 'entered' end
      redis.call('SADD', KEYS[2], try)
      redis.call('HINCRBY', KEYS[3], player, 1)
    end
  end
  out[#out + 1] = status
end
return out
