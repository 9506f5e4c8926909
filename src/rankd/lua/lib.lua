-- lib: helpers every script is loaded with (stores/redis_scripts.py puts this file first).
--
-- rank_in(key, public, member, stored): the 1-based rank of ``member`` (composite
-- ``stored``, written to ``key``) in the player's own view of the ``public`` board: its
-- rank there, or, written to a side key, everyone public strictly above it plus one.
--
-- with_times(key, slice): a ZREVRANGE ... WITHSCORES slice as a flat member, score, exact
-- time (ms, 0: not recorded) list.
--
-- at_key(key, member): the exact-times hash holding a member's achieved time beside the
-- sorted set ``key``: <key>:at:<h>, h = the member's bytes as a big-endian number modulo
-- 65521 (stores/redis_keys.py time_bucket computes the same). Same hash tag as ``key``.
local function at_key(key, member)
  local h = 0
  for i = 1, #member do h = (h * 256 + string.byte(member, i)) % 65521 end
  return key .. ':at:' .. h
end

local function rank_in(key, public, member, stored)
  if key == public then
    return redis.call('ZREVRANK', key, member) + 1
  end
  return redis.call('ZCOUNT', public, '(' .. stored, '+inf') + 1
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
