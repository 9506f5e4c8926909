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


def time_bucket(member: str) -> int:
    """Which exact-times hash holds a member's time: its bytes as a big-endian number modulo
    65,521 (the Lua scripts' ``at_key`` computes the same, a byte at a time)."""
    return int.from_bytes(member.encode(), "big") % TIME_BUCKETS
