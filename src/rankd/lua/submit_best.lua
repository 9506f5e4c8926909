-- submit_best: raise a player's best in one board period and read the standing, atomically.
--
-- KEYS[1] = the key the entry is written to (the public board, or a side key such as
--           :shadow or :pending for a player who must not show publicly)
-- KEYS[2] = the public board the rank is read from (equal to KEYS[1] for most players)
-- KEYS[3] = the side the player's entry must leave, if it is there: :shadow when writing
--           the public board (a ban lifted since), the public board when writing :shadow
--           (a ban newer than the writer knew); KEYS[1] itself for none
-- KEYS[4] = the period's :applied key (marks of runs the submit path applied; see lib.lua)
-- ARGV[1] = composite of this run (integer below 2^53, as a decimal string)
-- ARGV[2] = member (player id)
-- ARGV[3] = the run's exact end time (ms)
-- ARGV[4] = the mark "<player>|<run_id>", or "" for none (the log consumer, replays)
-- ARGV[5], ARGV[6] = now (ms), and when marks older than that are forgotten (ms)
-- ARGV[7] = the run's metadata JSON, or "" for none: kept with the entry if the run holds it
--
-- Returns {changed, rank, stored, mine, achieved, prev_rank, prev_stored, prev_achieved}:
--   changed  1 if this call created or improved the entry, else 0
--   rank     1-based rank of the entry in the player's own view of the public board
--   stored   the entry's composite after the call
--   mine     1 if the entry is this run's (its composite and exact time; a resend gives 1)
--   achieved the exact end time (ms) of the run holding the entry (0: not recorded)
--   prev_*   the same three for the entry before the call, read in the same atomic step
--            (prev_rank 0: there was none); equal to rank, stored, achieved when unchanged
-- An entry improves on a higher composite, or an equal one reached earlier (to the ms): a
-- max over one total order, so duplicates and any order of the same runs converge. The
-- time is in the member (see lib.lua), so an improvement replaces the member; ZADD GT
-- cannot compare across members. The exact time also lives in <KEYS[2]>:at:<bucket> (same
-- hash tag, field per side, see lib.lua), which is how the member is found again.

-- see lib.lua, loaded before this.

refuse_while_restoring(KEYS[2])

if KEYS[3] ~= KEYS[1] then absorb(KEYS[1], KEYS[3], KEYS[2], ARGV[2], nil) end
local composite, ms = tonumber(ARGV[1]), tonumber(ARGV[3])
local member, stored, stored_at, at, field = locate(KEYS[1], KEYS[2], ARGV[2])
local changed = 0
local prev, prev_stored, prev_at = 0, stored or 0, stored_at or 0
if (not stored) or better(composite, ms, stored, stored_at) then
  -- the old rank costs a lookup only when the entry moves; unchanged, it is the rank
  if stored then prev = rank_in(KEYS[1], KEYS[2], member, stored) end
  member = put(KEYS[1], KEYS[2], ARGV[2], composite, ms, ARGV[7], member, stored, at, field)
  stored, stored_at, changed = composite, ms, 1
end
mark(KEYS[4], ARGV[4], ARGV[5])
forget(KEYS[4], ARGV[4], ARGV[6])
local rank = rank_in(KEYS[1], KEYS[2], member, stored)
if changed == 0 then prev = rank end
local mine = (stored == composite and offset(stored_at) == offset(ms)) and 1 or 0
return {changed, rank, stored, mine, stored_at, prev, prev_stored, prev_at}
