-- own_entry: a player's own view of one board period: their best entry on any side and the
-- rank it would take among the public entries, in one atomic read.
--
-- KEYS[1] = the public board, KEYS[2] = its :shadow key, KEYS[3] = its :pending key
-- ARGV[1] = player id
--
-- Returns {-1, total} when the player has no entry on any side, else {side, total,
-- composite, rank, achieved}: side 0 public, 1 shadow, 2 pending (the better of public and
-- pending when both hold one: a higher composite, or an equal one reached earlier); total
-- the public entries; rank 1-based in the player's own view (see rank_in in lib.lua);
-- achieved the exact time (ms, 0: not recorded).

-- see lib.lua, loaded before this.

local best_side, best, best_at, best_member = -1, nil, 0, nil
for side = 1, 3 do
  local member, composite, ms = locate(KEYS[side], KEYS[1], ARGV[1])
  if composite and (best == nil or better(composite, ms, best, best_at)) then
    best_side, best, best_at, best_member = side, composite, ms, member
  end
end
local total = redis.call('ZCARD', KEYS[1])
if best == nil then
  return {-1, total}
end
local rank = rank_in(KEYS[best_side], KEYS[1], best_member, best)
return {best_side - 1, total, best, rank, best_at}
