"""Where a player's data lands, as numbers: the shard of a sharded board that holds a player
and the exact-times hash that holds a member's time. Pure: the Redis keys
(stores/redis/keys.py), the Lua scripts (lib.lua at_key) and the SQL that rebuilds them
(stores/order_sql.py, stores/rebuild/pages.py, migration 004's rankd_time_bucket) compute
the same from these."""

from __future__ import annotations

from hashlib import md5

# a prime; 10M members make about 150 per bucket
TIME_BUCKETS = 65521
# A shard's exact-times hashes are folded into fewer: a 16-shard period with 65,521 hashes
# a shard held 16 x 65,521 mostly tiny hashes, about 70 bytes a member at 2 million members
# in key overhead alone; 4,093 a shard (a prime) keep the period near 65,000 hashes again,
# about 23 bytes a member (docs/giant-boards.md). Lua's at_key folds the same way.
SHARD_TIME_BUCKETS = 4093


# a league period's placements and a board's tiers are split over this many small hashes (a
# prime), so each stays a listpack (about 25 bytes a field instead of about 80) up to about
# 4 million players a period; Lua's league_bucket computes the same
LEAGUE_BUCKETS = 4093


def league_bucket(player_id: str) -> int:
    """Which of a league's hashes holds a player: the id's bytes as a big-endian number
    modulo 4,093 (lib.lua league_bucket, a byte at a time)."""
    return int.from_bytes(player_id.encode(), "big") % LEAGUE_BUCKETS


def shard_of(player_id: str, shards: int) -> int:
    """Which shard of a sharded board holds a player: the first 4 bytes of the MD5 of the
    id's UTF-8 bytes, big-endian, modulo ``shards`` (-1: the board is not sharded). Stable
    across processes and versions (not Python's salted hash), and PostgreSQL computes the
    same for a rebuild (stores/order_sql.py shard_sql):
    ``('x' || left(md5(player_id), 8))::bit(32)::bigint``."""
    if shards <= 1:
        return -1
    return (
        int.from_bytes(md5(player_id.encode(), usedforsecurity=False).digest()[:4], "big") % shards
    )


class Layout(int):
    """A board's shard count, used as the int it is everywhere, that also knows where its
    shards' key names start: shard ``k`` of a layout is named ``#<base + k>``. Changing a
    board's ``shards`` builds a second layout beside the one that serves
    (services/resharding.py), named so the two cannot collide, so both are written while
    the move runs and the reads switch over at once."""

    base: int

    def __new__(cls, shards: int, base: int = 0) -> Layout:
        made = super().__new__(cls, shards)
        made.base = base if shards > 1 else 0
        return made

    def __repr__(self) -> str:
        return f"Layout({int(self)}, base={self.base})"

    def __str__(self) -> str:  # the count, as any int prints (an int's str is its repr)
        return str(int(self))


def base_of(shards: int) -> int:
    """Where a layout's shard names start (0 for a plain count)."""
    return shards.base if isinstance(shards, Layout) else 0


def shard_name(player_id: str, shards: int) -> int:
    """The name of the shard holding a player (``#<n>`` in its keys; -1: not sharded)."""
    k = shard_of(player_id, shards)
    return k if k < 0 else k + base_of(shards)


def next_base(serving: int, shards: int) -> int:
    """Where a new layout of ``shards`` beside ``serving`` starts its names: below the
    serving one's range if it fits there, else just past it (an unsharded layout has no
    shard names, so any start fits beside it)."""
    if shards <= 1 or serving <= 1:
        return 0
    start = base_of(serving)
    return 0 if shards <= start else start + int(serving)


def time_bucket(member: str) -> int:
    """Which exact-times hash holds a member's time: its bytes as a big-endian number modulo
    65,521 (the Lua scripts' ``at_key`` computes the same, a byte at a time)."""
    return int.from_bytes(member.encode(), "big") % TIME_BUCKETS
