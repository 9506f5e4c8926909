-- submit_best_many: submit_best for several runs on one board period, in one call.
--
-- KEYS[1] = the key the entries are written to (public board or a side key)
-- KEYS[2] = the public board the ranks are read from (equal to KEYS[1] for most players)
-- KEYS[3] = the side the entries must leave, if there (see submit_best.lua)
-- KEYS[4] = the period's :applied key (see submit_best.lua)
-- ARGV[1], ARGV[2] = now (ms), and when marks older than that are forgotten (ms)
-- ARGV[3], ARGV[4], ... = composite, member, exact end time (ms), mark ("" for none),
--           metadata ("" for none) quintuples, applied in order
--
-- Returns a flat list of the eight values submit_best.lua answers, per quintuple, as
-- submit_best.lua does for one. A batch of runs costs the client one command per period
-- instead of one per run.

-- see lib.lua, loaded before this.

refuse_while_restoring(KEYS[2])

local out = {}
local marked = ''
for i = 3, #ARGV, 5 do
  local player = ARGV[i + 1]
  if KEYS[3] ~= KEYS[1] then absorb(KEYS[1], KEYS[3], KEYS[2], player, nil) end
  local composite, ms = tonumber(ARGV[i]), tonumber(ARGV[i + 2])
  local member, stored, stored_at, at, field = locate(KEYS[1], KEYS[2], player)
  local changed = 0
  local prev, prev_stored, prev_at = 0, stored or 0, stored_at or 0
  if (not stored) or better(composite, ms, stored, stored_at) then
    if stored then prev = rank_in(KEYS[1], KEYS[2], member, stored) end
    member = put(KEYS[1], KEYS[2], player, composite, ms, ARGV[i + 4], member, stored, at, field)
    stored, stored_at, changed = composite, ms, 1
  end
  mark(KEYS[4], ARGV[i + 3], ARGV[1])
  if ARGV[i + 3] ~= '' then marked = ARGV[i + 3] end
  local rank = rank_in(KEYS[1], KEYS[2], member, stored)
  if changed == 0 then prev = rank end
  out[#out + 1] = changed
  out[#out + 1] = rank
  out[#out + 1] = stored
  out[#out + 1] = (stored == composite and offset(stored_at) == offset(ms)) and 1 or 0
  out[#out + 1] = stored_at
  out[#out + 1] = prev
  out[#out + 1] = prev_stored
  out[#out + 1] = prev_at
end
forget(KEYS[4], marked, ARGV[2])
return out
