-- submit_latest: make a player's entry in one board period their latest run, and read the
-- standing, atomically (a board or window with policy ``latest``).
--
-- KEYS[1..4] = as submit_best.lua: the key written, the public board, the side the entry
--              must leave, the period's :applied key
-- ARGV[1..7] = as submit_best.lua: composite, player id, the run's exact end (ms), mark, now,
--              forget marks before, metadata ("" for none)
-- ARGV[8]   = the run's id
--
-- The entry is the run with the latest end, to the ms; of runs ending in the same ms, the
-- one with the greater run id (byte by byte), so a resend or any order of the same runs
-- converges. The holding run's id is kept in <KEYS[2]>:rid under the entry's member (same
-- hash tag; its fields go with their members, as :meta's do). Ranks still order entries by
-- composite (the score, then the earlier time). Returns submit_best.lua's eight values;
-- ``mine`` is 1 if the entry is this run (a resend answers 1).

-- see lib.lua, loaded before this.

refuse_while_restoring(KEYS[2])

local player, run_id = ARGV[2], ARGV[8]
if KEYS[3] ~= KEYS[1] then absorb(KEYS[1], KEYS[3], KEYS[2], player, 'latest') end
local composite, ms = tonumber(ARGV[1]), tonumber(ARGV[3])
local rids = KEYS[2] .. ':rid'
local member, stored, stored_at, at, field = locate(KEYS[1], KEYS[2], player)
local holder = ''
if stored then holder = run_id_of(KEYS[2], member) end
local changed = 0
local prev, prev_stored, prev_at = 0, stored or 0, stored_at or 0
if (not stored) or later(ms, run_id, stored_at, holder) then
  if stored then prev = rank_in(KEYS[1], KEYS[2], member, stored) end
  local old = member
  member = put(KEYS[1], KEYS[2], player, composite, ms, ARGV[7], member, stored, at, field)
  if stored and old ~= member then redis.call('HDEL', rids, old) end
  redis.call('HSET', rids, member, run_id)
  stored, stored_at, holder, changed = composite, ms, run_id, 1
end
mark(KEYS[4], ARGV[4], ARGV[5])
forget(KEYS[4], ARGV[4], ARGV[6])
local rank = rank_in(KEYS[1], KEYS[2], member, stored)
if changed == 0 then prev = rank end
local mine = (holder == run_id) and 1 or 0
return {changed, rank, stored, mine, stored_at, prev, prev_stored, prev_at}
