"""Entries' metadata read back from Redis: a period's ``:meta`` hashes (keys.PeriodKeys.meta),
where the scripts keep each entry's run metadata under the entry's member (lua/lib.lua put)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rankd import codec
from rankd.periods import PeriodRef
from rankd.stores.redis.common import Shards
from rankd.stores.redis.connection import RedisConn, reachable


async def metadata_of(
    conn: RedisConn,
    shards: Shards,
    ref: PeriodRef,
    entries: Sequence[tuple[str, int]],
    *,
    primary: bool = False,
) -> list[bytes | None]:
    """The metadata JSON of each (player, exact achieved ms) entry of a period (None: none):
    one HMGET per key holding them (a sharded board's: each player's shard), all in one round
    trip, from the primary when ``primary`` (the season job archives what it reads)."""
    by_key: dict[str, list[int]] = {}
    for i, (player, _) in enumerate(entries):
        by_key.setdefault(shards.own(ref, player).meta, []).append(i)
    if not by_key:
        return []
    asked = [(key, [codec.member(*entries[i]) for i in indexes]) for key, indexes in by_key.items()]
    with reachable():
        if primary:
            replies = await asyncio.gather(
                *(conn.on_primary("HMGET", key, *members) for key, members in asked)
            )
        else:
            pipe = conn.client.pipeline(transaction=False)
            for key, members in asked:
                pipe.hmget(key, members)
            replies = await pipe.execute()
    found: list[bytes | None] = [None] * len(entries)
    for indexes, values in zip(by_key.values(), replies, strict=True):
        for i, value in zip(indexes, values, strict=True):
            found[i] = value
    return found
