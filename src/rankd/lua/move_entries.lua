-- move_entries: move players' entries from one side of a board period to another (a ban:
-- public to :shadow; an unban: back; a rebuild: its staged board to :shadow), or drop them
-- (an erasure).
--
-- KEYS[1] = the side the entries go to (with "drop": unused, pass KEYS[2])
-- KEYS[2] = the side they leave
-- KEYS[3] = the period's public board (names the exact-times hashes; see lib.lua)
-- ARGV[1] = "best" (the better entry stays), "latest" (the later run stays), "sum" (totals
--           add up), "replace" (the moved
--           entry replaces any there: the rebuild's copy is the whole truth) or "drop" (the
--           entries, their exact times and metadata are removed: the one place an erasure
--           or an admin's removal takes a player's entry from a key)
-- ARGV[2], ARGV[3], ARGV[4] = a sum board's 2^time_bits, max_score and order ("" otherwise)
-- ARGV[5..] = player ids
--
-- Returns how many entries moved (or were dropped). Moving again moves nothing, so a sweep
-- may be repeated.

-- see lib.lua, loaded before this.

-- "replace" is the rebuild's own move, made while the period's flag is set
if ARGV[1] ~= 'replace' then refuse_while_restoring(KEYS[3]) end

local sum = nil
if ARGV[1] == 'sum' then
  sum = {tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == 'desc'}
elseif ARGV[1] == 'latest' then
  sum = 'latest'
end
local moved = 0
for i = 5, #ARGV do
  if ARGV[1] == 'drop' then
    moved = moved + drop(KEYS[2], KEYS[3], ARGV[i], true)
  else
    if ARGV[1] == 'replace' then
      drop(KEYS[1], KEYS[3], ARGV[i])
    end
    moved = moved + absorb(KEYS[1], KEYS[2], KEYS[3], ARGV[i], sum)
  end
end
return moved
