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
-- ARGV[3] = unix seconds at which the written key expires, or "0" for never
-- ARGV[4] = the run's exact end time (ms)
-- ARGV[5] = the mark "<player>|<run_id>", or "" for none (the log consumer, replays)
-- ARGV[6], ARGV[7] = now (ms), and when marks older than that are forgotten (ms)
--
-- Returns {changed, rank, stored, mine, achieved}:
--   changed  1 if this call created or raised the entry (ZADD GT CH), else 0
--   rank     1-based rank of the entry in the player's own view of the public board
--   stored   the entry's composite after the call
--   mine     1 if the entry is this run's composite (a resend of the best gives 1 too)
--   achieved the exact end time (ms) of the run holding the entry (0: not recorded)
-- ZADD GT never lowers an entry, so duplicates and any order of the same runs converge.
-- The exact time lives beside the entry in <KEYS[2]>:at:<bucket> (same hash tag, so the
-- same slot; field per side, see lib.lua): small hashes Redis keeps as compact listpacks.
-- Works on Redis 6.2 (ZREVRANK WITHSCORE is 7.2+, so the score is read with ZSCORE).

-- at_key, rank_in, with_times: see lib.lua, loaded before this.

if KEYS[3] ~= KEYS[1] then absorb(KEYS[1], KEYS[3], KEYS[2], ARGV[2], nil) end
local at = at_key(KEYS[2], ARGV[2])
local field = side_field(KEYS[1], KEYS[2], ARGV[2])
local changed = redis.call('ZADD', KEYS[1], 'GT', 'CH', ARGV[1], ARGV[2])
if changed == 1 then
  redis.call('HSET', at, field, ARGV[4])
end
if ARGV[3] ~= '0' then
  redis.call('EXPIREAT', KEYS[1], ARGV[3])
  redis.call('EXPIREAT', at, ARGV[3])
end
mark(KEYS[4], ARGV[5], ARGV[6])
forget(KEYS[4], ARGV[5], ARGV[7])
local stored = redis.call('ZSCORE', KEYS[1], ARGV[2])
local rank = rank_in(KEYS[1], KEYS[2], ARGV[2], stored)
local mine = (tonumber(stored) == tonumber(ARGV[1])) and 1 or 0
local achieved = tonumber(redis.call('HGET', at, field) or '0')
return {changed, rank, tonumber(stored), mine, achieved}
