-- league_cohort: a cohort's members, found by one of them or by its id, in one call.
--
-- KEYS[1] = the period's members, KEYS[2] its roster (as league_place.lua)
-- ARGV[1] = the cohort size; then either "player", a player id, or "cohort", a tier index
-- and a cohort number (from 0)
--
-- Returns {} when the player is not placed, else {tier, cohort, member, member, ...} in
-- placement order (the roster's holes, placements never logged, left out).

local size = tonumber(ARGV[1])
local tier, cohort
if ARGV[2] == 'player' then
  local at = redis.call('HGET', KEYS[1], ARGV[3])
  if not at then return {} end
  local t, ordinal = string.match(at, '^(%d+):(%d+)$')
  tier, cohort = t, math.floor(tonumber(ordinal) / size)
else
  tier, cohort = ARGV[3], tonumber(ARGV[4])
end
local fields = {}
for ordinal = cohort * size, cohort * size + size - 1 do
  fields[#fields + 1] = tier .. ':' .. ordinal
end
local out = {tier, cohort}
for _, player in ipairs(redis.call('HMGET', KEYS[2], unpack(fields))) do
  if player then out[#out + 1] = player end
end
return out
