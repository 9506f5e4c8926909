-- lib: helpers every script is loaded with (stores/redis/scripts.py puts this file first).
--
-- The member layout (codec.py defines it; this file and stores/standings.py follow): a
-- member is stamp(ms) .. player id, the stamp a fixed-width, reversed base-64 rendering of
-- the entry's exact time, so equal composites read (ZREVRANGE) earliest first, then by
-- player id in descending byte order. A player's member on any side is recovered from the
-- exact time kept beside it: locate(key, public, player).
--
-- stamp(ms): the 7-character prefix of a member achieved at ``ms`` (0: not recorded).
-- unstamp(member): the exact ms a member's stamp holds (0 for the stamp's first ms).
-- player_of(member): the player id of a member.
-- offset(ms): the time as the stamp orders it (clamped ms since 2020-01-01).
-- better(c1, ms1, c2, ms2): whether composite c1 at ms1 ranks before c2 at ms2 (a higher
-- composite, or an equal one reached earlier).
--
-- locate(key, public, player): the player's entry on ``key``: member, composite (nil: no
-- entry), exact ms, its at_key hash and field.
--
-- put(key, public, player, composite, ms, meta): make the player's entry on ``key`` this
-- one, replacing any (a changed time is a changed member: the old one must go, and its
-- metadata with it). ``meta``: the run's metadata JSON, kept in <public>:meta under the
-- member, '' for none (any the member had goes); nil leaves it as it is (an entry moved
-- with its member keeps what it had). Four more arguments, what locate returned just before
-- (member, composite, at, field), spare it locating the entry again.
--
-- drop(key, public, player, forget): remove the player's entry on ``key`` and its time; 1
-- if any. With ``forget`` (an erasure, a removed entry) its metadata goes too; otherwise it
-- stays, as the same member may be another side's entry (a hold just approved).
--
-- rank_in(key, public, member, stored): the 1-based rank of ``member`` (composite
-- ``stored``, written to ``key``) in the player's own view of the ``public`` board: its
-- rank there, or, written to a side key (:shadow, :pending), the rank it would take if
-- published: everyone public strictly above it, and those equal to it whose member sorts
-- after it byte by byte (a reversed range orders equal scores so), plus one. Only entries
-- of the same composite (the same score within one time unit) are walked.
--
-- side_field(key, public, player): the field of ``player``'s exact time in its at_key hash
-- for an entry written to ``key``: the player id itself on the public board, id .. '~s'
-- on :shadow and id .. '~p' on :pending ('~' is in no player id). One hash family per
-- period, whatever the side, so removing a period removes every side's times.
--
-- absorb(dst, src, public, player, sum): move ``player``'s entry from ``src`` into ``dst``
-- (two sides of one period) and its exact time with it. A ``best`` entry (sum == nil) keeps
-- the better entry; a ``latest`` one (sum == 'latest') the later run (see later); on a
-- ``sum`` board (sum = {mult, max_score, desc}) the totals add up, at the later time: a
-- player's runs are counted once in the period's :runs set, whichever side took them. The entry kept keeps its metadata; the other's goes. Returns 1
-- if there was an entry to move.
--
-- later(ms1, rid1, ms2, rid2): whether a run ending at ms1 with run id rid1 comes after one
-- at ms2 with rid2 (a ``latest`` board's order: the later end, then the greater run id,
-- byte by byte). run_id_of(public, member): the run id holding a ``latest`` entry, kept in
-- <public>:rid under the member ('' if none is recorded).
--
-- with_times(slice): a ZREVRANGE ... WITHSCORES slice as a flat player id, score, exact
-- time (ms, 0: not recorded) list; the time is read back from each member's stamp.
--
-- at_key(key, player): the exact-times hash holding a player's achieved time beside the
-- sorted set ``key``: <key>:at:<h>, h = the id's bytes as a big-endian number modulo
-- 65521, then modulo 4093 for a shard's key (a tag ending in #<k>; stores/redis/keys.py
-- times computes the same). Same hash tag as ``key``.
-- mark(key, member, now): note in a period's :applied key that the submit path applied run
-- ``member`` ("<player>|<run_id>") here, at ``now`` (ms); an empty member marks nothing.
-- Written in the script that applies the run, so a mark never exists without its write
-- (services/applier.py trusts them). forget(key, member, before): drop marks older than
-- ``before`` (ms), when this call marked something.
-- hist_key(key): the score histogram beside ``key`` if it is a sharded board's public
-- key (a tag ending in #<k>), else nil: only sharded boards keep one (see histogram.py).
-- hist_bucket(c): the histogram bucket of composite ``c`` (histogram.py bucket computes the
-- same): c itself below 256, else 256 buckets per power of two, each 1/256 of its value.
-- hist_floor(b): the lowest composite of bucket ``b``.
-- hist_move(key, old, new): an entry of ``key`` went from composite ``old`` to ``new`` (nil:
-- none); counts the change in the histogram's '#' field too.
-- refuse_while_restoring(public): fail the script (an error reply, which the service takes
-- for Redis being unavailable: a 503, and the log consumer retries that board's runs later)
-- while the period's <public>:restoring lease is set: a staged rebuild has written
-- PostgreSQL's exact times into the live hashes and not yet swapped its copy in
-- (stores/redis/staging.py load_period). A write then would leave a time pointing at a member
-- the swapped-in key does not hold, and the next write a second member for the player.
-- With <public>:torn set and no lease, that rebuild died midway: TORN, and the service
-- rebuilds the period (services/rebuild/repairs.py). Both errors name the key. Called first,
-- before any write, by every script that writes entries.
local STAMP_EPOCH_MS = 1577836800000
local STAMP_WIDTH = 7
local STAMP_MAX = 4398046511103  -- 2^42 - 1

local function hist_key(key)
  if string.find(key, '#%d+}$') then return key .. ':hist' end
  return nil
end

local function hist_bucket(c)
  if c < 256 then return c end
  local e, v = 0, c
  -- halving a double is exact, and so is its floor: the same integers as Python's shifts
  while v >= 512 do
    v = math.floor(v / 2)
    e = e + 1
  end
  return e * 256 + v
end

local function hist_floor(b)
  -- the lowest composite of bucket b (inverse of hist_bucket; histogram.py floor_of)
  if b < 256 then return b end
  local e = math.floor(b / 256) - 1
  local v = b - e * 256
  return v * 2 ^ e
end

local function hist_move(key, old, new)
  local h = hist_key(key)
  if not h then return end
  if old then redis.call('HINCRBY', h, string.format('%d', hist_bucket(old)), -1) end
  if new then redis.call('HINCRBY', h, string.format('%d', hist_bucket(new)), 1) end
  redis.call('HINCRBY', h, '#', 1)
end


local function refuse_while_restoring(public)
  -- one EXISTS for both: the common answer is 0
  if redis.call('EXISTS', public .. ':restoring', public .. ':torn') == 0 then return end
  -- a string, not {err = ...}: Redis 6.2's handler fails on a table and says nothing of it
  if redis.call('EXISTS', public .. ':restoring') == 1 then
    error('RESTORING ' .. public .. ' is being restored; retry shortly')
  end
  error('TORN ' .. public .. ' lost its rebuild midway and is being rebuilt; retry shortly')
end

local function mark(key, member, now)
  if member ~= '' then redis.call('ZADD', key, now, member) end
end

local function forget(key, member, before)
  if member ~= '' then redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. before) end
end

local function at_key(key, member)
  local h = 0
  for i = 1, #member do h = (h * 256 + string.byte(member, i)) % 65521 end
  if string.find(key, '#%d+}$') then h = h % 4093 end  -- a shard's: SHARD_TIME_BUCKETS
  return key .. ':at:' .. h
end

local function offset(ms)
  local v = ms - STAMP_EPOCH_MS
  if v < 0 then return 0 end
  if v > STAMP_MAX then return STAMP_MAX end
  return v
end

local function stamp(ms)
  local v = STAMP_MAX - offset(ms)
  local out = {}
  for i = STAMP_WIDTH, 1, -1 do
    local digit = v % 64
    out[i] = string.char(48 + digit)
    v = (v - digit) / 64
  end
  return table.concat(out)
end

local function unstamp(member)
  local v = 0
  for i = 1, STAMP_WIDTH do v = v * 64 + string.byte(member, i) - 48 end
  local off = STAMP_MAX - v
  if off == 0 then return 0 end
  return STAMP_EPOCH_MS + off
end

local function player_of(member)
  return string.sub(member, STAMP_WIDTH + 1)
end

local function better(c1, ms1, c2, ms2)
  if c1 ~= c2 then return c1 > c2 end
  return offset(ms1) < offset(ms2)
end

-- Lua's string comparison follows the C locale's collation, Redis's member order memcmp:
-- compare bytes.
local function bytes_after(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

local function side_field(key, public, player)
  if string.sub(key, -8) == ':pending' then return player .. '~p' end
  if string.sub(key, -7) == ':shadow' then return player .. '~s' end
  return player  -- the public board, or a rebuild's staged copy of it
end

local function locate(key, public, player)
  local at = at_key(public, player)
  local field = side_field(key, public, player)
  local ms = tonumber(redis.call('HGET', at, field) or '0')
  local member = stamp(ms) .. player
  local composite = redis.call('ZSCORE', key, member)
  if composite then composite = tonumber(composite) end
  return member, composite, ms, at, field
end

-- append_entry(out, public, player): the player's composite, 0-based rank and exact ms on
-- the public board, appended to ``out`` (false x3: no entry); friends and league reads.
local function append_entry(out, public, player)
  local member, composite, achieved = locate(public, public, player)
  if composite then
    out[#out + 1] = string.format('%.0f', composite)
    out[#out + 1] = redis.call('ZREVRANK', public, member)
    out[#out + 1] = achieved
  else
    out[#out + 1] = false
    out[#out + 1] = false
    out[#out + 1] = false
  end
end

-- put(key, public, player, composite, ms, meta[, held_member, held, at, field]): the last
-- four as locate returned them just before (nothing written since), so a submit that has
-- located the entry does not read it again (an HGET, a ZSCORE and the hashing a run)
local function put(key, public, player, composite, ms, meta, held_member, held, at, field)
  if not at then
    local _
    held_member, held, _, at, field = locate(key, public, player)
  end
  local member = stamp(ms) .. player
  if held and held_member ~= member then
    redis.call('ZREM', key, held_member)
    redis.call('HDEL', public .. ':meta', held_member)
  end
  -- a run's own metadata, or none: only a member kept (the same ms) can hold the old one's,
  -- so a submit without metadata costs no extra command otherwise
  if meta == '' and held and held_member == member then
    redis.call('HDEL', public .. ':meta', member)
  end
  if meta and meta ~= '' then redis.call('HSET', public .. ':meta', member, meta) end
  -- %.0f keeps every digit; Lua's default number formatting would round past 14 digits
  redis.call('ZADD', key, string.format('%.0f', composite), member)
  redis.call('HSET', at, field, ms)
  hist_move(key, held, composite)
  return member
end

local function drop(key, public, player, forget)
  local member, held, _, at, field = locate(key, public, player)
  redis.call('HDEL', at, field)
  if not held then return 0 end
  redis.call('ZREM', key, member)
  if forget then
    redis.call('HDEL', public .. ':meta', member)
    redis.call('HDEL', public .. ':rid', member)
  end
  hist_move(key, held, nil)
  return 1
end

local function rank_in(key, public, member, stored)
  if key == public then
    return redis.call('ZREVRANK', key, member) + 1
  end
  local exact = string.format('%.0f', stored)
  local rank = redis.call('ZCOUNT', public, '(' .. exact, '+inf') + 1
  for _, other in ipairs(redis.call('ZRANGEBYSCORE', public, exact, exact)) do
    if bytes_after(other, member) then rank = rank + 1 end
  end
  return rank
end

local function run_id_of(public, member)
  return redis.call('HGET', public .. ':rid', member) or ''
end

local function later(ms1, rid1, ms2, rid2)
  if ms1 ~= ms2 then return ms1 > ms2 end
  return bytes_after(rid1, rid2)
end

local function absorb(dst, src, public, player, sum)
  local moved_member, moved, moved_at = locate(src, public, player)
  if not moved then return 0 end
  local held_member, held, held_at = locate(dst, public, player)
  local kept = moved_member
  if sum == 'latest' then
    if (not held) or later(moved_at, run_id_of(public, moved_member), held_at,
        run_id_of(public, held_member)) then
      if held and held_member ~= moved_member then
        redis.call('HDEL', public .. ':rid', held_member)
      end
      put(dst, public, player, moved, moved_at)
    else
      kept = held_member
    end
  elseif sum == nil then
    if (not held) or better(moved, moved_at, held, held_at) then
      put(dst, public, player, moved, moved_at)
    else
      kept = held_member
    end
  elseif not held then
    put(dst, public, player, moved, moved_at)
  else
    local mult, max_score, desc = sum[1], sum[2], sum[3]
    local ka, kb = math.floor(moved / mult), math.floor(held / mult)
    local ta, tb = moved - ka * mult, held - kb * mult
    local total_a, total_b = ka, kb
    if not desc then total_a, total_b = max_score - ka, max_score - kb end
    local total = math.min(total_a + total_b, max_score)
    local key = total
    if not desc then key = max_score - total end
    -- a smaller time part is a later time: the total was reached at the later one
    kept = put(dst, public, player, key * mult + math.min(ta, tb), math.max(moved_at, held_at))
  end
  redis.call('ZREM', src, moved_member)
  -- the moved entry's metadata goes with it, unless it lost to the entry already there
  if kept ~= moved_member then
    redis.call('HDEL', public .. ':meta', moved_member)
    if sum == 'latest' then redis.call('HDEL', public .. ':rid', moved_member) end
  end
  hist_move(src, moved, nil)
  redis.call('HDEL', at_key(public, player), side_field(src, public, player))
  return 1
end

local function with_times(slice)
  local out = {}
  for i = 1, #slice, 2 do
    out[#out + 1] = player_of(slice[i])
    out[#out + 1] = slice[i + 1]
    out[#out + 1] = unstamp(slice[i])
  end
  return out
end

-- A league's keys (stores/redis/keys.py LeagueKeys): the scripts get the period's fill,
-- ready, wait and wset keys as KEYS, and ARGV[1] the board's tag, ARGV[2] the period,
-- ARGV[3] the cohort size; the rest are named here. league(K, A) gathers them.
-- league_bucket(player): which of the small hashes holds a player (placement.py, 4,093).
-- league_place(L, player): the player's "<tier>:<ordinal>" in a period whose tiers are
-- known: theirs already, else the next ordinal of their tier (the first when absent).
local function league(K, A)
  return {tag = A[1], base = A[1] .. ':' .. A[2], size = tonumber(A[3]),
          fill = K[1], ready = K[2], wait = K[3], arrived = K[4]}
end

local function league_bucket(player)
  local h = 0
  for i = 1, #player do h = (h * 256 + string.byte(player, i)) % 4093 end
  return h
end

local function league_members(L, player)
  return L.base .. ':m:' .. league_bucket(player)
end

local function league_roster(L, tier, cohort)
  return L.base .. ':c:' .. tier .. ':' .. cohort
end

local function league_put(L, player, tier, ordinal)
  redis.call('HSET', league_members(L, player), player, tier .. ':' .. ordinal)
  redis.call('HSET', league_roster(L, tier, math.floor(ordinal / L.size)), ordinal, player)
end

-- league_queue(L, player, n): queue a player who waits for the period's tiers, at their
-- arrival ``n`` (nil: next), once; "wait:<n>", the arrival they hold.
local function league_queue(L, player, n)
  local held = redis.call('ZSCORE', L.wait, player)
  if held then return 'wait:' .. held end
  if not n then
    n = redis.call('INCR', L.arrived)
  elseif tonumber(redis.call('GET', L.arrived) or '0') < n then
    redis.call('SET', L.arrived, n)
  end
  redis.call('ZADD', L.wait, n, player)
  return 'wait:' .. n
end

-- league_find(L, A): the (tier, cohort) A names from A[4]: "player" and an id (nil: not
-- placed), or "cohort", a tier and a cohort number.
local function league_find(L, A)
  if A[4] ~= 'player' then return A[5], tonumber(A[6]) end
  local at = redis.call('HGET', league_members(L, A[5]), A[5])
  if not at then return nil end
  local tier, ordinal = string.match(at, '^(%d+):(%d+)$')
  return tier, math.floor(tonumber(ordinal) / L.size)
end

local function league_place(L, player)
  local at = redis.call('HGET', league_members(L, player), player)
  if at then return at end
  local tier = redis.call('HGET', L.tag .. ':tiers:' .. league_bucket(player), player) or '0'
  local ordinal = redis.call('HINCRBY', L.fill, tier, 1) - 1
  league_put(L, player, tier, ordinal)
  return tier .. ':' .. ordinal
end
