-- league_placed: put back placements the log or the durable copy holds (the log consumer
-- after the submit path, a replay, a rebuild; idempotent). KEYS and ARGV[1..3] as
-- league_place.lua.
--
-- ARGV[4], ... = (player, "<tier>:<ordinal>" or "wait:<n>") pairs. A placement already
-- there stays; the fill never falls below a placement put back. A "wait:<n>" queues the
-- player at their arrival n, or, if the period's tiers are known by now, places them at once. A place another player holds
-- by now (Redis was rebuilt before this placement reached the durable copy, and the place
-- went again) is not taken twice: the player gets a new one.
--
-- Returns (player, placement) for every pair: the place the player holds in Redis after the
-- call ("wait:<n>" while queued), which the durable copy records (so a retry, or a player
-- placed anew meanwhile, never leaves the two stores apart).

local L = league(KEYS, ARGV)
local out = {}
local taken = {}
local ready = redis.call('EXISTS', L.ready) == 1
for i = 4, #ARGV, 2 do
  local player, at = ARGV[i], ARGV[i + 1]
  local members = league_members(L, player)
  local n = string.match(at, '^wait:(%d+)$')
  if n then
    if redis.call('HEXISTS', members, player) == 0 then
      if ready then
        league_place(L, player)
      else
        league_queue(L, player, tonumber(n))
      end
    end
  elseif redis.call('HEXISTS', members, player) == 0 then
    local tier, ordinal = string.match(at, '^(%d+):(%d+)$')
    ordinal = tonumber(ordinal)
    local holder = redis.call('HGET', league_roster(L, tier, math.floor(ordinal / L.size)), ordinal)
    if holder and holder ~= player then
      taken[#taken + 1] = player  -- placed anew below, after every place put back
    else
      league_put(L, player, tier, ordinal)
      if tonumber(redis.call('HGET', L.fill, tier) or '0') <= ordinal then
        redis.call('HSET', L.fill, tier, ordinal + 1)
      end
    end
  end
end
for _, player in ipairs(taken) do league_place(L, player) end
for i = 4, #ARGV, 2 do
  out[#out + 1] = ARGV[i]
  local held = redis.call('HGET', league_members(L, ARGV[i]), ARGV[i])
  if not held then
    local n = redis.call('ZSCORE', L.wait, ARGV[i])
    held = n and ('wait:' .. n) or ARGV[i + 1]
  end
  out[#out + 1] = held
end
return out
