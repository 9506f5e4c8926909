-- lib: helpers every script is loaded with (stores/redis_scripts.py puts this file first).
--
-- rank_in(key, public, member, stored): the 1-based rank of ``member`` (composite
-- ``stored``, written to ``key``) in the player's own view of the ``public`` board: its
-- rank there, or, written to a side key (:shadow, :pending), the rank it would take if
-- published: everyone public strictly above it, and those equal to it whose id sorts after
-- it (a reversed range orders equal scores by member, descending), plus one.
--
-- side_field(key, public, member): the field of ``member``'s exact time in its at_key hash
-- for an entry written to ``key``: the member itself on the public board, member .. '~s'
-- on :shadow and member .. '~p' on :pending ('~' is in no player id). One hash family per
-- period, whatever the side, so removing a period removes every side's times.
--
-- absorb(dst, src, public, member, sum): move ``member``'s entry from ``src`` into ``dst``
-- (two sides of one period) and its exact time with it. A ``best`` entry (sum == nil) keeps
-- the better composite; on a ``sum`` board (sum = {mult, max_score, desc}) the totals add
-- up, at the later time: a player's runs are counted once in the period's :runs set,
-- whichever side took them. Returns 1 if there was an entry to move.
--
-- with_times(key, slice): a ZREVRANGE ... WITHSCORES slice as a flat member, score, exact
-- time (ms, 0: not recorded) list.
--
-- at_key(key, member): the exact-times hash holding a member's achieved time beside the
-- sorted set ``key``: <key>:at:<h>, h = the member's bytes as a big-endian number modulo
-- 65521 (stores/redis_keys.py time_bucket computes the same). Same hash tag as ``key``.
-- mark(key, member, now): note in a period's :applied key that the submit path applied run
-- ``member`` ("<player>|<run_id>") here, at ``now`` (ms); an empty member marks nothing.
-- Written in the script that applies the run, so a mark never exists without its write
-- (services/applier.py trusts them). forget(key, member, before): drop marks older than
-- ``before`` (ms), when this call marked something.
local function mark(key, member, now)
  if member ~= '' then redis.call('ZADD', key, now, member) end
end

local function forget(key, member, before)
  if member ~= '' then redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. before) end
end

local function at_key(key, member)
  local h = 0
  for i = 1, #member do h = (h * 256 + string.byte(member, i)) % 65521 end
  return key .. ':at:' .. h
end

local function rank_in(key, public, member, stored)
  if key == public then
    return redis.call('ZREVRANK', key, member) + 1
  end
  local rank = redis.call('ZCOUNT', public, '(' .. stored, '+inf') + 1
  for _, other in ipairs(redis.call('ZRANGEBYSCORE', public, stored, stored)) do
    if other > member then rank = rank + 1 end
  end
  return rank
end

local function side_field(key, public, member)
  if string.sub(key, -8) == ':pending' then return member .. '~p' end
  if string.sub(key, -7) == ':shadow' then return member .. '~s' end
  return member  -- the public board, or a rebuild's staged copy of it
end

local function absorb(dst, src, public, member, sum)
  local moved = redis.call('ZSCORE', src, member)
  if not moved then return 0 end
  local at = at_key(public, member)
  local from_field = side_field(src, public, member)
  local to_field = side_field(dst, public, member)
  local moved_at = tonumber(redis.call('HGET', at, from_field) or '0')
  local held = redis.call('ZSCORE', dst, member)
  if sum == nil then
    if (not held) or tonumber(moved) > tonumber(held) then
      redis.call('ZADD', dst, moved, member)
      redis.call('HSET', at, to_field, moved_at)
    end
  elseif not held then
    redis.call('ZADD', dst, moved, member)
    redis.call('HSET', at, to_field, moved_at)
  else
    local mult, max_score, desc = sum[1], sum[2], sum[3]
    local a, b = tonumber(moved), tonumber(held)
    local ka, kb = math.floor(a / mult), math.floor(b / mult)
    local ta, tb = a - ka * mult, b - kb * mult
    local total_a, total_b = ka, kb
    if not desc then total_a, total_b = max_score - ka, max_score - kb end
    local total = math.min(total_a + total_b, max_score)
    local key = total
    if not desc then key = max_score - total end
    -- a smaller time part is a later time: the total was reached at the later one
    redis.call('ZADD', dst, string.format('%.0f', key * mult + math.min(ta, tb)), member)
    local held_at = tonumber(redis.call('HGET', at, to_field) or '0')
    redis.call('HSET', at, to_field, math.max(moved_at, held_at))
  end
  redis.call('ZREM', src, member)
  redis.call('HDEL', at, from_field)
  return 1
end

local function with_times(key, slice)
  local out = {}
  for i = 1, #slice, 2 do
    out[#out + 1] = slice[i]
    out[#out + 1] = slice[i + 1]
    out[#out + 1] = tonumber(redis.call('HGET', at_key(key, slice[i]), slice[i]) or '0')
  end
  return out
end
