-- submit_sum: add a run to a player's total in one board period, counting each run once,
-- and read the standing, atomically.
--
-- KEYS[1] = the key the entry is written to (public board or a side key)
-- KEYS[2] = the public board the rank is read from (equal to KEYS[1] for most players)
-- KEYS[3] = the side the player's entry must leave, if it is there (see submit_best.lua);
--           KEYS[1] itself for none
-- KEYS[4] = the period's counted runs (sorted set: "<player>|<run_id>" -> ended_at ms), same
--           hash tag; keyed by player too, so another player's reuse of a run id cannot
--           suppress or borrow a count
-- KEYS[5] = the period's :applied key (see submit_best.lua)
-- ARGV[1] = run id
-- ARGV[2] = member (player id)
-- ARGV[3] = the run's score (non-negative integer)
-- ARGV[4] = the run's time part: reversed time units since the period start (see codec.py)
-- ARGV[5] = 2^time_bits (the multiplier that puts the score part above the time part)
-- ARGV[6] = max_score (a total saturates here)
-- ARGV[7] = "desc" or "asc"
-- ARGV[8] = the run's ended_at in ms (score of its id in KEYS[4])
-- ARGV[9] = forget counted ids that ended before this ms ("0": keep them while the key lives);
--           the service refuses runs this old, so forgetting them cannot double count
-- ARGV[10] = "0", or for a late run (older than the horizon, that PostgreSQL has counted):
--            when it was first counted (ms), its id's score in KEYS[4]; it is then counted
--            unless its id is there already, whatever ARGV[9] says
-- ARGV[11] = the mark "<player>|<run_id>", or "" for none (the log consumer, replays)
-- ARGV[12], ARGV[13] = now (ms), and when marks older than that are forgotten (ms)
-- ARGV[14] = the run's metadata JSON, or "": the entry keeps the latest counted run's, so
--            it is written when this run is the latest (none: the previous one's goes)
--
-- Returns {changed, rank, stored, counted, achieved}: counted is 2 if this call counted the
-- run in the total, 1 if an earlier one did (a resend of a counted run answers 1, changed
-- 0), 3 if an earlier call did with this late call's own count time: the same count by
-- PostgreSQL, sent by another writer first (services/late_sums.py); achieved is the exact
-- end time (ms) of the latest counted run (0: not recorded), kept in <KEYS[2]>:at:<bucket>
-- beside the entry (see submit_best.lua). Then prev_rank, prev_stored, prev_achieved: the
-- entry before the call, as submit_best.lua answers them.
-- The total's time is the latest counted run's time (in the composite's time part and, to
-- the ms, in the member's stamp; see lib.lua), so any order of the same runs gives the same
-- entry. All arithmetic stays below 2^53, where Lua's doubles are exact.

-- see lib.lua, loaded before this.

refuse_while_restoring(KEYS[2])

local desc = ARGV[7] == 'desc'
if KEYS[3] ~= KEYS[1] then
  absorb(KEYS[1], KEYS[3], KEYS[2], ARGV[2], {tonumber(ARGV[5]), tonumber(ARGV[6]), desc})
end
local counted = 0
local changed = 0
if ARGV[9] ~= '0' then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. ARGV[9])
end
local late = ARGV[10] ~= '0'
local fresh = late or tonumber(ARGV[8]) >= tonumber(ARGV[9])
local added = 0
local reported = 0  -- the counted value answered (see Returns)
if fresh then
  local seen_at = ARGV[8]
  if late then seen_at = ARGV[10] end
  local id = ARGV[2] .. '|' .. ARGV[1]
  added = redis.call('ZADD', KEYS[4], 'NX', seen_at, id)
  counted = 1
  reported = 1 + added
  if late and added == 0
      and tonumber(redis.call('ZSCORE', KEYS[4], id)) == tonumber(seen_at) then
    reported = 3  -- an earlier call counted this same late count (PostgreSQL's)
  end
end
local member, old, latest = locate(KEYS[1], KEYS[2], ARGV[2])
local had = old and true or false  -- locate answers false for no entry
local prev, prev_stored, prev_at = 0, old or 0, latest or 0
if added == 1 then
  local mult = tonumber(ARGV[5])
  local max_score = tonumber(ARGV[6])
  local total = 0
  local tpart = tonumber(ARGV[4])
  local ms = tonumber(ARGV[8])
  local meta = ARGV[14]
  if old then
    local key = math.floor(old / mult)
    local old_tpart = old - key * mult
    if desc then total = key else total = max_score - key end
    -- a smaller time part is a later time: the total was reached at the latest run
    if old_tpart < tpart then tpart = old_tpart end
    if latest > ms then
      ms = latest
      meta = nil  -- an older run: the latest one's metadata stays
    end
  end
  total = math.min(total + tonumber(ARGV[3]), max_score)
  local key = total
  if not desc then key = max_score - total end
  local composite = key * mult + tpart
  if composite ~= old or ms ~= latest then
    changed = 1  -- a later time alone changes the entry too: it moves among its ties
    if had then prev = rank_in(KEYS[1], KEYS[2], member, prev_stored) end
    member = put(KEYS[1], KEYS[2], ARGV[2], composite, ms, meta)
    old, latest = composite, ms
  end
end
mark(KEYS[5], ARGV[11], ARGV[12])
forget(KEYS[5], ARGV[11], ARGV[13])
if not old then
  return {0, 0, 0, 0, 0, 0, 0, 0}
end
local rank = rank_in(KEYS[1], KEYS[2], member, old)
if changed == 0 then prev = rank end
return {changed, rank, old, reported, latest, prev, prev_stored, prev_at}
