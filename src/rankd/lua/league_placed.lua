-- league_placed: put back placements the log or the durable copy holds (the log consumer
-- after the submit path, a replay, a rebuild; idempotent). Keys as league_place.lua.
--
-- ARGV = (player, "<tier>:<ordinal>" or "wait") pairs. A placement already there stays;
-- the fill never falls below a placement put back. A "wait" queues the player, or, if the
-- period's tiers are known by now, places them at once.
--
-- Returns (player, placement) pairs of the placements this call made for "wait"s.

local out = {}
local ready = redis.call('EXISTS', KEYS[5]) == 1
for i = 1, #ARGV, 2 do
  local player, at = ARGV[i], ARGV[i + 1]
  if at == 'wait' then
    if redis.call('HEXISTS', KEYS[2], player) == 0 then
      if ready then
        out[#out + 1] = player
        out[#out + 1] = league_place(KEYS, player)
      elseif redis.call('SADD', KEYS[7], player) == 1 then
        redis.call('RPUSH', KEYS[6], player)
      end
    end
  elseif redis.call('HSETNX', KEYS[2], player, at) == 1 then
    redis.call('HSET', KEYS[3], at, player)
    local tier, ordinal = string.match(at, '^(%d+):(%d+)$')
    if tonumber(redis.call('HGET', KEYS[4], tier) or '0') <= tonumber(ordinal) then
      redis.call('HSET', KEYS[4], tier, tonumber(ordinal) + 1)
    end
  end
end
return out
