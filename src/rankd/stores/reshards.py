"""PostgreSQL's side of a live resharding (services/resharding.py): which boards have a move
under way, the periods a move builds, and each step recorded only if the move is still
where its driver last saw it (a PUT, a deletion or another driver may have moved on)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from psycopg.types.json import Jsonb

from rankd.boards import BoardConfig
from rankd.placement import SHARD_TIME_BUCKETS, TIME_BUCKETS, Layout, base_of
from rankd.reshard import Footprint, Reshard
from rankd.stores.postgres import NOW_MS, Conn, PostgresStore

_MOVING = (
    "SELECT board_id FROM boards WHERE coalesce(config->'reshard', 'null') <> 'null'"
    " ORDER BY board_id"
)

# the board incarnation and the move exactly as the driver read them: a deleted or
# recreated board, or a move that went on without it (another driver, a cancel and a new
# move), is left alone
_STEP = (
    "UPDATE boards SET config = config || %(patch)s, updated_at = now()"
    " WHERE board_id = %(id)s AND generation = %(generation)s"
    " AND config->'reshard' = %(was)s"
)

# (window, period) pairs with entries in the durable copy and their entries (every segment)
_PERIODS = (
    "SELECT s.win, s.period, coalesce(sum(b.n), 0)::bigint FROM periods_seen s"
    " LEFT JOIN (SELECT win, period, segment, count(*) AS n FROM player_best"
    "  WHERE board_id = %(b)s GROUP BY win, period, segment) b"
    " ON b.win = s.win AND b.period = s.period AND b.segment = s.segment"
    " WHERE s.board_id = %(b)s GROUP BY s.win, s.period"
)

# a board's standings in Redis as the durable copy has them (every window, period and
# segment but those archived out of Redis), one row each, summed up: what a move copies
_FOOTPRINT = (
    "SELECT coalesce(sum(n), 0)::bigint, coalesce(sum(ids), 0)::bigint,"
    " coalesce(sum(least(n, %(buckets)s)), 0)::bigint, coalesce(sum(fields), 0)::bigint,"
    " coalesce(sum(field_bytes), 0)::bigint FROM ("
    "  SELECT count(*) AS n, sum(octet_length(b.player_id)) AS ids,"
    "   count(b.metadata) + count(*) FILTER (WHERE b.win = ANY(%(latest)s)) AS fields,"
    "   coalesce(sum(octet_length(b.player_id) + octet_length(b.metadata)), 0)"
    "   + coalesce(sum(octet_length(b.player_id) + octet_length(b.run_id))"
    "     FILTER (WHERE b.win = ANY(%(latest)s)), 0) AS field_bytes"
    "  FROM player_best b WHERE b.board_id = %(b)s AND NOT EXISTS (SELECT 1"
    "   FROM period_archives a WHERE a.board_id = b.board_id AND a.win = b.win"
    "   AND a.period = b.period AND a.segment = b.segment AND a.archived_ms IS NOT NULL)"
    "  GROUP BY b.win, b.period, b.segment) s"
)


@contextlib.asynccontextmanager
async def _on(pg: PostgresStore, conn: Conn | None) -> AsyncIterator[Conn]:
    """``conn`` (the driver's lease connection) if given, else a pooled one."""
    if conn is not None:
        yield conn
    else:
        async with pg.connection() as own:
            yield own


async def clock_ms(pg: PostgresStore, conn: Conn | None = None) -> int:
    """PostgreSQL's clock, in ms: a move's phases start, and their settle times end, by one
    clock for every instance, whatever their own clocks' skew."""
    async with _on(pg, conn) as on:
        cur = await on.execute(f"SELECT {NOW_MS}")
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def moving(pg: PostgresStore) -> list[str]:
    """The boards with a move under way."""
    async with pg.connection() as conn:
        cur = await conn.execute(_MOVING)
        return [str(r[0]) for r in await cur.fetchall()]


async def footprint(pg: PostgresStore, config: BoardConfig, shards: int) -> Footprint:
    """What a move of the board into ``shards`` shards copies (rankd/reshard.py)."""
    params = {
        "b": config.board_id,
        # a standing's exact-times hashes: one per bucket its members fall in
        "buckets": TIME_BUCKETS if shards == 1 else shards * SHARD_TIME_BUCKETS,
        "latest": [w for w in config.windows if config.policy_of(w) == "latest"],
    }
    async with pg.connection() as conn:
        cur = await conn.execute(_FOOTPRINT, params)
        row = await cur.fetchone()
    assert row is not None
    return Footprint(*(int(v) for v in row))


async def periods(pg: PostgresStore, board_id: str) -> list[tuple[str, str, int]]:
    """(window, period, entries) of the board's periods, in the order a move builds them."""
    async with pg.connection() as conn:
        cur = await conn.execute(_PERIODS, {"b": board_id})
        found = [(str(w), str(p), int(n)) for w, p, n in await cur.fetchall()]
    # the order the move's cursor compares by (Python's, not the database's collation)
    return sorted(found, key=lambda r: f"{r[0]}/{r[1]}")


async def step(
    pg: PostgresStore,
    config: BoardConfig,
    then: Reshard | None,
    served: Layout | None = None,
    conn: Conn | None = None,
) -> bool:
    """Record the move's next state ``then`` (None: it ended) and, with ``served``, the
    layout reads come from; only if the stored move is still exactly ``config``'s. ``conn``:
    the driver's lease connection, so that a driver whose lease lapsed records nothing.
    Returns whether it was recorded."""
    assert config.reshard is not None
    patch: dict[str, Any] = {"reshard": None if then is None else then.as_json()}
    if served is not None:
        patch |= {"shards": int(served), "shard_base": base_of(served)}
    params = {
        "patch": Jsonb(patch),
        "id": config.board_id,
        "generation": config.generation,
        "was": Jsonb(config.reshard.as_json()),
    }
    async with _on(pg, conn) as on:
        cur = await on.execute(_STEP, params)
        return cur.rowcount == 1
