-- own_entry: a player's own view of one board period: their best entry on any side and the
-- rank it would take among the public entries, in one atomic read.
--
-- KEYS[1] = the public board, KEYS[2] = its :shadow key, KEYS[3] = its :pending key
-- ARGV[1] = member (player id)
--
-- Returns {-1, total} when the player has no entry on any side, else {side, total,
-- composite, rank, achieved}: side 0 public, 1 shadow, 2 pending (the better of public and
-- pending when both hold one); total the public entries; rank 1-based in the player's own
-- view (see rank_in in lib.lua); achieved the exact time (ms, 0: not recorded).

-- at_key, rank_in, side_field, absorb: see lib.lua, loaded before this.

local best_side, best = -1, nil
for side = 1, 3 do
  local score = redis.call('ZSCORE', KEYS[side], ARGV[1])
  if score and (best == nil or tonumber(score) > tonumber(best)) then
    best_side, best = side, score
  end
end
local total = redis.call('ZCARD', KEYS[1])
if best == nil then
  return {-1, total}
end
local key = KEYS[best_side]
local rank = rank_in(key, KEYS[1], ARGV[1], best)
local field = side_field(key, KEYS[1], ARGV[1])
local achieved = tonumber(redis.call('HGET', at_key(KEYS[1], ARGV[1]), field) or '0')
return {best_side - 1, total, tonumber(best), rank, achieved}
