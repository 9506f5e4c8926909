"""The rolling-7d window's durable side: each player's best per UTC day (``rolling_days``),
and the recompute of the window's one period when a day leaves it.

The period itself (``current``) is a ``player_best`` period like any other, raised by every
run as a max; only a day leaving can lower an entry, so the consumer also keeps the best
per day, and the roll (services/rolling.py) replaces the entries that came from a day gone
by the best of the days still held. Run in a transaction holding the apply lock
exclusively: no consumer batch writes between the two tables meanwhile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from psycopg import AsyncConnection

from rankd.periods import DAY_MS, ROLLING, ROLLING_PERIOD_ID, PeriodRef
from rankd.placement import time_bucket
from rankd.stores.order_sql import better_where_sql, stamp_offset_sql

Conn = AsyncConnection[Any]


class DayRow(Protocol):
    """A player's best of one day (stores/standings.py BestRow is one)."""

    @property
    def player_id(self) -> str: ...
    @property
    def composite(self) -> int: ...
    @property
    def score(self) -> int: ...
    @property
    def achieved_ms(self) -> int: ...
    @property
    def run_id(self) -> str: ...
    @property
    def metadata(self) -> str | None: ...


_BETTER = better_where_sql("rolling_days")


async def write_days(
    conn: Conn, days: Mapping[tuple[PeriodRef, int], Mapping[str, DayRow]]
) -> None:
    """Raise each (board, day, segment, player)'s best to the batch's, in the caller's
    transaction (COPY, then one conditional upsert, as stores/standings.py writes)."""
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS rolling_in (board_id text, day int, segment text,"
        " player_id text, composite bigint, score bigint, achieved_ms bigint, run_id text,"
        " time_bucket int, metadata text) ON COMMIT DELETE ROWS"
    )
    await conn.execute("TRUNCATE rolling_in")  # one transaction may write more than once
    async with conn.cursor().copy("COPY rolling_in FROM STDIN") as copy:
        for (ref, day), rows in days.items():
            for r in rows.values():
                await copy.write_row(
                    (
                        ref.board,
                        day,
                        ref.segment,
                        r.player_id,
                        r.composite,
                        r.score,
                        r.achieved_ms,
                        r.run_id,
                        time_bucket(r.player_id),
                        r.metadata,
                    )
                )
    await conn.execute(
        "INSERT INTO rolling_days SELECT * FROM rolling_in"
        " ORDER BY board_id, day, segment, player_id"
        " ON CONFLICT (board_id, day, segment, player_id) DO UPDATE SET"
        "   composite = EXCLUDED.composite, score = EXCLUDED.score,"
        "   achieved_ms = EXCLUDED.achieved_ms, run_id = EXCLUDED.run_id,"
        "   metadata = EXCLUDED.metadata" + _BETTER
    )


@dataclass(frozen=True, slots=True)
class RollState:
    stale: bool  # rows of a day before the window (a run applied late, a replay)
    pg_day: int  # the first day PostgreSQL's period was last recomputed for (-1: never)
    redis_day: int  # the first day Redis's copy was last rebuilt for (-1: never)


async def state(conn: Conn, board_id: str, first_day: int) -> RollState:
    """Where the board's rolling period stands against a window starting at ``first_day``."""
    cur = await conn.execute(
        "SELECT EXISTS (SELECT 1 FROM rolling_days WHERE board_id = %(b)s AND day < %(d)s),"
        " (SELECT pg_day FROM rolling_state WHERE board_id = %(b)s),"
        " (SELECT redis_day FROM rolling_state WHERE board_id = %(b)s)",
        {"b": board_id, "d": first_day},
    )
    row = await cur.fetchone()
    assert row is not None
    stale, pg_day, redis_day = row
    return RollState(
        bool(stale), -1 if pg_day is None else pg_day, -1 if redis_day is None else redis_day
    )


@dataclass(frozen=True, slots=True)
class Rolled:
    """What a day change did to the durable copy."""

    # (segment, player, achieved ms) of every entry that came from a day gone
    gone: list[tuple[str, str, int]]
    # (segment, player) of those that still have one: their best of the days left
    kept: set[tuple[str, str]]


async def roll(conn: Conn, board_id: str, first_day: int) -> Rolled:
    """Drop the days before ``first_day`` and put every entry that came from one of them
    back as the player's best of the days left (or none). Idempotent."""
    args = {"b": board_id, "d": first_day, "w": ROLLING, "p": ROLLING_PERIOD_ID}
    await conn.execute("DELETE FROM rolling_days WHERE board_id = %(b)s AND day < %(d)s", args)
    cur = await conn.execute(
        "DELETE FROM player_best WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s"
        " AND achieved_ms < %(ms)s RETURNING segment, player_id, achieved_ms",
        {**args, "ms": first_day * DAY_MS},
    )
    gone = [(str(s), str(p), int(ms)) for s, p, ms in await cur.fetchall()]
    if not gone:
        return Rolled([], set())
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS rolling_gone (segment text, player_id text)"
        " ON COMMIT DELETE ROWS"
    )
    await conn.execute("TRUNCATE rolling_gone")
    async with conn.cursor().copy("COPY rolling_gone FROM STDIN") as copy:
        for segment, player, _ in gone:
            await copy.write_row((segment, player))
    cur = await conn.execute(
        "INSERT INTO player_best (board_id, win, period, segment, player_id, composite,"
        " score, achieved_ms, run_id, time_bucket, metadata)"
        " SELECT DISTINCT ON (d.segment, d.player_id) d.board_id, %(w)s, %(p)s,"
        "  d.segment, d.player_id, d.composite, d.score, d.achieved_ms, d.run_id,"
        "  d.time_bucket, d.metadata"
        " FROM rolling_days d JOIN rolling_gone g"
        "  ON g.segment = d.segment AND g.player_id = d.player_id"
        " WHERE d.board_id = %(b)s"
        " ORDER BY d.segment, d.player_id, d.composite DESC,"
        f"  {stamp_offset_sql('d.achieved_ms')}"
        " RETURNING segment, player_id",
        args,
    )
    return Rolled(gone, {(str(s), str(p)) for s, p in await cur.fetchall()})


async def record(conn: Conn, board_id: str, *, pg_day: int, redis_day: int) -> None:
    """Record how far the board's rolling period was recomputed (never backwards)."""
    await conn.execute(
        "INSERT INTO rolling_state (board_id, pg_day, redis_day) VALUES (%s, %s, %s)"
        " ON CONFLICT (board_id) DO UPDATE SET"
        " pg_day = GREATEST(rolling_state.pg_day, EXCLUDED.pg_day),"
        " redis_day = GREATEST(rolling_state.redis_day, EXCLUDED.redis_day)",
        (board_id, pg_day, redis_day),
    )
