"""Entries' metadata (and a ``latest`` window's run ids) read back from the durable copy for
a rebuild (migrations/016).

A rebuild restores each period's ``:meta`` hash before its entries (services/rebuild/):
the fields are keyed by member (player and exact time), so writing them into the live hash
shows nothing early and changes no live entry's. PostgreSQL formats the HSET arguments (the
members as the scripts write them, order_sql.py) a thousand fields at a time, grouped by the
key (and shard) that holds them, so no row crosses Python on its own. Only rows that have
metadata are read, through a partial index: a board without any costs one empty scan.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from psycopg import AsyncConnection

from rankd.boards import BoardConfig
from rankd.periods import PeriodRef
from rankd.stores.order_sql import member_sql, shard_sql
from rankd.stores.rebuild.pages import resp_fragment
from rankd.stores.redis.bulk import Loader
from rankd.stores.redis.keys import base_of, period_keys
from rankd.stores.redis.staging import Loads

FIELDS_PER_COMMAND = 1000


def _narrow(board_id: str | None, window: str | None, period: str | None) -> str:
    """Only the conditions given, so the planner uses the partial index whatever is asked."""
    return "".join(
        f" AND {column} = %({name})s"
        for column, name, given in (
            ("board_id", "b", board_id),
            ("win", "w", window),
            ("period", "p", period),
        )
        if given is not None
    )


def _metadata_rows(narrow: str) -> str:
    return (
        "SELECT board_id, win, period, segment, player_id, achieved_ms AS at, metadata AS value"
        f" FROM player_best WHERE metadata IS NOT NULL{narrow}"
        # runs held for review wait on :pending with theirs (each segment the hold covers)
        " UNION ALL SELECT board_id, win, period, h.segment, player_id, ended_ms, metadata"
        " FROM holds, unnest(ARRAY[''] || segments) AS h(segment)"
        f" WHERE status = 'pending' AND metadata IS NOT NULL{narrow}"
    )


def _run_id_rows(narrow: str) -> str:
    """A latest window's entries' run ids (lua/submit_latest.lua keeps them in :rid)."""
    return (
        "SELECT board_id, win, period, segment, player_id, achieved_ms AS at, run_id AS value"
        " FROM player_best JOIN unnest(%(lb)s::text[], %(lw)s::text[]) AS l(b, w)"
        f" ON l.b = board_id AND l.w = win WHERE true{narrow}"
    )


def _grouped(rows: str) -> str:
    """HSET arguments (member, value) of ``rows``, a thousand a group per key and shard."""
    shard = f"CASE WHEN s.n > 1 THEN {shard_sql('player_id').replace('%(n)s', 's.n')} ELSE -1 END"
    return (
        "SELECT board_id, win, period, segment, k, count(*),"
        f" string_agg({resp_fragment(member_sql('player_id', 'at'), 'value')}, '')"
        " FROM (SELECT r.*, k, (row_number() OVER (PARTITION BY board_id, win, period, segment,"
        f"   k ORDER BY player_id) - 1) / {FIELDS_PER_COMMAND} AS chunk"
        f"  FROM ({rows}) r"
        "  JOIN unnest(%(ids)s::text[], %(ns)s::int[]) AS s(id, n) ON s.id = r.board_id,"
        f"  LATERAL (SELECT {shard} AS k) place) grouped"
        " GROUP BY board_id, win, period, segment, k, chunk"
    )


async def restore(
    conn: AsyncConnection[Any],
    loads: Loads,
    todo: Sequence[tuple[PeriodRef, int, BoardConfig]],
    board_id: str | None,
    window: str | None,
    period: str | None,
) -> int:
    """The metadata of the periods a rebuild restores (``todo``: period, start, board
    config), as the durable copy holds it, into their ``:meta`` hashes, and a ``latest``
    window's run ids into ``:rid``; returns the fields written. Reads through a
    server-side cursor (the rebuild's transaction)."""
    wanted = {ref for ref, _, _ in todo}
    shards = {ref.board: config.shards for ref, _, config in todo}
    if not shards:
        return 0
    latest = sorted(
        {(ref.board, ref.window) for ref, _, c in todo if c.policy_of(ref.window) == "latest"}
    )
    params = {
        "b": board_id,
        "w": window,
        "p": period,
        "ids": list(shards),
        "ns": list(shards.values()),
        "lb": [b for b, _ in latest],
        "lw": [w for _, w in latest],
    }
    narrow = _narrow(board_id, window, period)
    kinds = [(_metadata_rows(narrow), "meta")] + ([(_run_id_rows(narrow), "rid")] if latest else [])

    async def groups() -> AsyncIterator[tuple[str, int, bytes]]:
        for rows, suffix in kinds:
            async with conn.cursor(name="rankd_entry_fields") as cur:
                await cur.execute(_grouped(rows), params)
                while found := await cur.fetchmany(100):
                    for board, win, pid, segment, k, fields, arguments in found:
                        if PeriodRef(board, win, pid, segment) in wanted:
                            k = int(k)  # the shard's number; its keys' name counts from the base
                            name = k if k < 0 else k + base_of(shards[board])
                            pk = period_keys(board, win, pid, segment, name)
                            key = pk.meta if suffix == "meta" else pk.rid
                            yield key, int(fields), arguments.encode()

    return await Loader.hashes(loads.conn.nodes.for_key, groups())
