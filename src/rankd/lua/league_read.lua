-- league_read: a cohort, found by one of its players or by its id, with its members'
-- entries and names, in one call: league_cohort.lua, then friends.lua's read over the
-- period's key. For one Redis (not a cluster: the league's keys and the period's are in
-- different hash tags) and an unsharded board; elsewhere the two are read apart.
--
-- KEYS[1..4] as league_place.lua; KEYS[5] = the period's public board; KEYS[6] = the names
-- ARGV as league_cohort.lua
--
-- Returns {} when the player is not placed, else {tier, cohort, n, then n (ordinal,
-- member) pairs, then each member's composite, 0-based rank and exact ms (false x3: no
-- entry), then each member's name (false: none)}.

local L = league(KEYS, ARGV)
local tier, cohort = league_find(L, ARGV)
if not tier then return {} end
local roster = redis.call('HGETALL', league_roster(L, tier, cohort))
local out = {tier, cohort, #roster / 2}
local members = {}
for i = 1, #roster, 2 do
  out[#out + 1] = roster[i]
  out[#out + 1] = roster[i + 1]
  members[#members + 1] = roster[i + 1]
end
for _, player in ipairs(members) do append_entry(out, KEYS[5], player) end
if #members > 0 then
  for _, name in ipairs(redis.call('HMGET', KEYS[6], unpack(members))) do
    out[#out + 1] = name
  end
end
return out
