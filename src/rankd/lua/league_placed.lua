-- league_placed: put back placements the log or the durable copy holds (the log consumer
-- after the submit path, a replay, a rebuild; idempotent). KEYS and ARGV[1..3] as
-- league_place.lua.
--
-- ARGV[4], ... = (player, "<tier>:<ordinal>" or "wait") pairs. A placement already there
-- stays; the fill never falls below a placement put back. A "wait" queues the player, or,
-- if the period's tiers are known by now, places them at once.
--
-- Returns (player, placement) pairs of the placements this call made for "wait"s.

local L = league(KEYS, ARGV)
local out = {}
local ready = redis.call('EXISTS', L.ready) == 1
for i = 4, #ARGV, 2 do
  local player, at = ARGV[i], ARGV[i + 1]
  local members = league_members(L, player)
  if at == 'wait' then
    if redis.call('HEXISTS', members, player) == 0 then
      if ready then
        out[#out + 1] = player
        out[#out + 1] = league_place(L, player)
      elseif redis.call('SADD', L.wset, player) == 1 then
        redis.call('RPUSH', L.wait, player)
      end
    end
  elseif redis.call('HEXISTS', members, player) == 0 then
    local tier, ordinal = string.match(at, '^(%d+):(%d+)$')
    ordinal = tonumber(ordinal)
    league_put(L, player, tier, ordinal)
    if tonumber(redis.call('HGET', L.fill, tier) or '0') <= ordinal then
      redis.call('HSET', L.fill, tier, ordinal + 1)
    end
  end
end
return out
