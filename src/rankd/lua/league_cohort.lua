-- league_cohort: a cohort's members, found by one of them or by its id, in one call.
--
-- KEYS and ARGV[1..3] as league_place.lua; then either "player" and a player id, or
-- "cohort", a tier index and a cohort number (from 0).
--
-- Returns {} when the player is not placed, else {tier, cohort, ordinal, member, ordinal,
-- member, ...} (the roster's holes, placements never logged or erased, left out).

local L = league(KEYS, ARGV)
local tier, cohort = league_find(L, ARGV)
if not tier then return {} end
local out = {tier, cohort}
for _, v in ipairs(redis.call('HGETALL', league_roster(L, tier, cohort))) do
  out[#out + 1] = v
end
return out
