-- set_entry: make one player's entry on one side of a board period exactly this one, or none
-- (a held run's decision resets the :pending entry to the best run still waiting).
--
-- KEYS[1] = the side key (public, :shadow or :pending)
-- KEYS[2] = the period's public board (names the exact-times hashes; see lib.lua)
-- ARGV[1] = player id
-- ARGV[2] = the entry's composite, or "" for none (the entry goes)
-- ARGV[3] = its exact time (ms)
--
-- Returns 1 if the player now has an entry there, else 0. The member holds the time (see
-- lib.lua), so the old one is found through the exact-times hash and removed here.

-- see lib.lua, loaded before this.

refuse_while_restoring(KEYS[2])

drop(KEYS[1], KEYS[2], ARGV[1])
if ARGV[2] == '' then
  return 0
end
put(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
return 1
