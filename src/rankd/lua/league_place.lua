-- league_place: place the players of a league period's runs before they are logged
-- (services/leagues.py), atomically against every other placement of the period.
--
-- KEYS[1] = the board's tiers (hash: player -> tier index; absent: the first tier)
-- KEYS[2] = the period's members (hash: player -> "<tier>:<ordinal>")
-- KEYS[3] = its roster (hash: "<tier>:<ordinal>" -> player)
-- KEYS[4] = its fill (hash: tier -> placements made)
-- KEYS[5] = present once the period's tiers are known (the previous period's moves made)
-- KEYS[6] = players waiting for that, in arrival order (list); KEYS[7] the same as a set
-- ARGV[1] = "1" if this is the board's first league period (its tiers are known at once)
-- ARGV[2], ... = the players, in order
--
-- Returns each player's "<tier>:<ordinal>", or "wait" (the player is queued: the season
-- job places the queue in order once the moves are made, league_advance.lua).

if ARGV[1] == '1' then redis.call('SET', KEYS[5], '1') end
local ready = redis.call('EXISTS', KEYS[5]) == 1
local out = {}
for i = 2, #ARGV do
  local player = ARGV[i]
  if ready then
    out[#out + 1] = league_place(KEYS, player)
  else
    local at = redis.call('HGET', KEYS[2], player)
    if at then
      out[#out + 1] = at
    else
      if redis.call('SADD', KEYS[7], player) == 1 then redis.call('RPUSH', KEYS[6], player) end
      out[#out + 1] = 'wait'
    end
  end
end
return out
