"""Redis's order and shards in SQL: what codec.py and redis/keys.py compute, for PostgreSQL.

The durable copy's writes (standings.py), the rebuild's pages (rebuild/pages.py) and the
archive's freeze from PostgreSQL (archive_job.py) order and place entries exactly as the
Lua scripts do in Redis; these builders are the one SQL form of each rule.
"""

from __future__ import annotations

from rankd.codec import STAMP_EPOCH_MS, STAMP_MAX, STAMP_WIDTH


def stamp_offset_sql(achieved_ms: str) -> str:
    """SQL for codec.stamp_offset."""
    return f"LEAST(GREATEST({achieved_ms} - {STAMP_EPOCH_MS}::bigint, 0), {STAMP_MAX}::bigint)"


def better_where_sql(table: str) -> str:
    """An upsert's ``WHERE``: the new row (EXCLUDED) ranks before ``table``'s: a higher
    composite, or an equal one reached earlier (Redis's order, lua/lib.lua better; the
    time clamped as the member's stamp clamps it)."""
    return (
        f" WHERE EXCLUDED.composite > {table}.composite"
        f"  OR (EXCLUDED.composite = {table}.composite"
        f"   AND {stamp_offset_sql('EXCLUDED.achieved_ms')}"
        f"    < {stamp_offset_sql(f'{table}.achieved_ms')})"
    )


def shard_sql(player: str) -> str:
    """SQL for a player's shard on a board of ``%(n)s`` shards, as placement.py shard_of
    computes it (the first 4 bytes of the id's MD5, big-endian, modulo the shards)."""
    return f"(('x' || left(md5({player}), 8))::bit(32)::bigint %% %(n)s)"


def member_sql(player: str, achieved_ms: str) -> str:
    """SQL for an entry's sorted-set member, as codec.member builds it: the reversed,
    clamped time in base 64 (chr(48)..chr(111)), STAMP_WIDTH characters, then the id."""
    value = f"({STAMP_MAX}::bigint - {stamp_offset_sql(achieved_ms)})"
    digits = " || ".join(
        f"chr(48 + (({value} >> {6 * i}) & 63)::int)" for i in range(STAMP_WIDTH - 1, -1, -1)
    )
    return f"({digits} || {player})"


def redis_order_sql(player: str, achieved_ms: str, composite: str) -> str:
    """SQL ORDER BY terms for Redis's order of a period's entries, best first (equal
    composites: members in descending byte order)."""
    return f'{composite} DESC, {member_sql(player, achieved_ms)} COLLATE "C" DESC'


def entry_member_sql(alias: str = "") -> str:
    """SQL for an entry's sorted-set member as the submit scripts write it, for a row of
    player_best (``alias``: its table alias with the dot). The one-period pages and the
    batched small periods both load members from here, so they cannot differ."""
    return member_sql(f"{alias}player_id", f"{alias}achieved_ms")
