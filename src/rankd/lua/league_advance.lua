-- league_advance: the period's tiers are known (the season job made the previous period's
-- moves and wrote the tiers): mark it so and place the waiting players in arrival order
-- (their n: the log carries it, so the order survives a rebuild and a replay).
-- KEYS and ARGV as league_place.lua (no players). Idempotent: once placed, a waiting player
-- keeps their place.
--
-- Returns (player, "<tier>:<ordinal>") pairs, one per waiting player, in order.

local L = league(KEYS, ARGV)
redis.call('SET', L.ready, '1')
local out = {}
for _, player in ipairs(redis.call('ZRANGE', L.wait, 0, -1)) do
  out[#out + 1] = player
  out[#out + 1] = league_place(L, player)
end
return out
