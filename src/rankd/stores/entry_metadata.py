"""Entries' metadata read back from the durable copy for a rebuild (migrations/016).

A rebuild restores each period's ``:meta`` hash before its entries (services/rebuild.py):
the fields are keyed by member (player and exact time), so writing them into the live hash
shows nothing early and changes no live entry's. Only rows that have metadata are read,
through a partial index, so a board without any costs the rebuild one empty index scan.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from psycopg import AsyncConnection

from rankd import codec
from rankd.boards import BoardConfig
from rankd.periods import PeriodRef
from rankd.stores.redis.keys import period_keys, shard_of
from rankd.stores.redis.loads import Loads

# (period, player id, exact achieved ms, metadata JSON)
MetaRow = tuple[PeriodRef, str, int, str]


def _sql(board_id: str | None, window: str | None, period: str | None) -> str:
    """Only the conditions given, so the planner uses the partial index whatever is asked."""
    narrow = "".join(
        f" AND {column} = %({name})s"
        for column, name, given in (
            ("board_id", "b", board_id),
            ("win", "w", window),
            ("period", "p", period),
        )
        if given is not None
    )
    return (
        "SELECT board_id, win, period, segment, player_id, achieved_ms, metadata"
        f" FROM player_best WHERE metadata IS NOT NULL{narrow}"
        # runs held for review wait on :pending with theirs (each segment the hold covers)
        " UNION ALL SELECT board_id, win, period, s.segment, player_id, ended_ms, metadata"
        " FROM holds, unnest(ARRAY[''] || segments) AS s(segment)"
        f" WHERE status = 'pending' AND metadata IS NOT NULL{narrow}"
    )


async def rows(
    conn: AsyncConnection[Any],
    board_id: str | None,
    window: str | None,
    period: str | None,
    size: int = 5_000,
) -> AsyncIterator[list[MetaRow]]:
    """The metadata of the entries (and held runs) of the periods asked, ``size`` rows at
    a time, through a server-side cursor (needs a transaction)."""
    params = {"b": board_id, "w": window, "p": period}
    async with conn.cursor(name="rankd_metadata") as cur:
        await cur.execute(_sql(board_id, window, period), params)
        while found := await cur.fetchmany(size):
            yield [(PeriodRef(*r[:4]), str(r[4]), int(r[5]), str(r[6])) for r in found]


async def restore(
    conn: AsyncConnection[Any],
    loads: Loads,
    todo: Sequence[tuple[PeriodRef, int, BoardConfig]],
    board_id: str | None,
    window: str | None,
    period: str | None,
) -> None:
    """The metadata of the periods a rebuild restores (``todo``: period, start, board
    config), as the durable copy holds it, into their ``:meta`` hashes."""
    shards = {ref: config.shards for ref, _, config in todo}
    async for found in rows(conn, board_id, window, period):
        fields = [
            (
                period_keys(*ref, shard_of(player, shards[ref])).meta,
                codec.member(player, achieved_ms),
                metadata,
            )
            for ref, player, achieved_ms, metadata in found
            if ref in shards
        ]
        await loads.put_metadata(fields)
