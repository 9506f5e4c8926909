-- league_place: place the players of a league period's runs before they are logged
-- (services/leagues.py), atomically against every other placement of the period.
--
-- KEYS = the period's fill (hash: tier -> placements made), ready (present once the
-- period's tiers are known: the previous period's moves made), wait (players waiting for
-- that, a sorted set by arrival) and arrived (the arrivals counted); see lib.lua league()
-- ARGV[1..3] = the board's league tag, the period, the cohort size
-- ARGV[4] = "1" if this is the board's first league period (its tiers are known at once)
-- ARGV[5], ... = the players, in order
--
-- Returns each player's "<tier>:<ordinal>" (their cohort: ordinal / cohort size), or
-- "wait:<n>" (queued, the n-th to arrive: the season job places the queue in arrival order
-- once the moves are made, league_advance.lua; the log carries n, so a rebuild and a
-- replay queue alike).

local L = league(KEYS, ARGV)
if ARGV[4] == '1' then redis.call('SET', L.ready, '1') end
local ready = redis.call('EXISTS', L.ready) == 1
local out = {}
for i = 5, #ARGV do
  local player = ARGV[i]
  if ready then
    out[#out + 1] = league_place(L, player)
  else
    out[#out + 1] = redis.call('HGET', league_members(L, player), player)
      or league_queue(L, player, nil)
  end
end
return out
