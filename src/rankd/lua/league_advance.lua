-- league_advance: the period's tiers are known (the season job made the previous period's
-- moves and wrote the tiers): mark it so and place the waiting players in arrival order.
-- Keys as league_place.lua. Idempotent: once placed, a waiting player keeps their place.
--
-- Returns (player, "<tier>:<ordinal>") pairs, one per waiting player, in order.

redis.call('SET', KEYS[5], '1')
local out = {}
for _, player in ipairs(redis.call('LRANGE', KEYS[6], 0, -1)) do
  out[#out + 1] = player
  out[#out + 1] = league_place(KEYS, player)
end
return out
