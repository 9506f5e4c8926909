"""The archive's season-job side: which periods to act on, freezing a closed period's
standings into PostgreSQL, marking it archived (its keys may leave Redis), thawing it.

The season job (services/seasons.py) freezes a period with one ``COPY`` of its entries in
rank order, from Redis or, once its key is gone, from the durable copy in Redis's order
(``player_best_pages``). The reads of frozen periods are stores/archive.py's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass

from rankd.aio import read_ahead
from rankd.periods import ENDLESS, PeriodRef
from rankd.stores.archive import KEY_WHERE, ArchiveState, FrozenEntry, key_params
from rankd.stores.order_sql import redis_order_sql
from rankd.stores.postgres import Conn, PostgresStore

Progress = Callable[[int], None]

# Binary COPY: PostgreSQL parses it faster than text, and psycopg formats it in C.
_COPY_TYPES = ["int8", "int4", "text", "int8", "int8", "int8", "text", "text"]
PAGE = 10_000  # entries per page read from player_best
PAGES_AHEAD = 4  # pages read ahead of the COPY (Redis or PostgreSQL works meanwhile)
# Longest period of any window (a month), for bounding the job's scan by period start.
LONGEST_PERIOD_MS = 31 * 86_400_000


@dataclass(frozen=True, slots=True)
class JobPeriod:
    """A period the season job looks at, with its archive state (None: not frozen)."""

    ref: PeriodRef
    start_ms: int
    state: ArchiveState | None


async def job_periods(
    conn: Conn, now_ms: int, boards: Collection[str] | None = None
) -> list[JobPeriod]:
    """Periods the job may have to act on: every period not yet archived, and archived ones
    recent enough that a raised ``grace_seconds`` could have reopened them."""
    cur = await conn.execute(
        "SELECT ps.board_id, ps.win, ps.period, ps.start_ms, a.entries,"
        "       a.archived_ms IS NOT NULL, ps.segment"
        " FROM periods_seen ps"
        " JOIN boards b ON b.board_id = ps.board_id"
        " LEFT JOIN period_archives a ON a.board_id = ps.board_id AND a.win = ps.win"
        "  AND a.period = ps.period AND a.segment = ps.segment"
        " WHERE ps.win <> ALL(%(endless)s)"
        "   AND (%(boards)s::text[] IS NULL OR ps.board_id = ANY(%(boards)s))"
        "   AND (a.archived_ms IS NULL OR ps.start_ms + %(longest)s"
        "        + (b.config->>'grace_seconds')::bigint * 1000 > %(now)s)"
        " ORDER BY ps.start_ms, ps.board_id, ps.win",
        {
            "endless": sorted(ENDLESS),
            "boards": None if boards is None else list(boards),
            "longest": LONGEST_PERIOD_MS,
            "now": now_ms,
        },
    )
    return [
        JobPeriod(
            PeriodRef(r[0], r[1], r[2], r[6]),
            int(r[3]),
            None if r[4] is None else ArchiveState(int(r[4]), bool(r[5])),
        )
        for r in await cur.fetchall()
    ]


async def archived_refs(
    conn: Conn, board_id: str | None, window: str | None, period: str | None
) -> set[PeriodRef]:
    """The standings (each segment's apart) that have left Redis, narrowed like
    stores/standings.periods: a rebuild must not bring these back."""
    cur = await conn.execute(
        "SELECT board_id, win, period, segment FROM period_archives"
        " WHERE archived_ms IS NOT NULL"
        "   AND (%(b)s::text IS NULL OR board_id = %(b)s)"
        "   AND (%(w)s::text IS NULL OR win = %(w)s)"
        "   AND (%(p)s::text IS NULL OR period = %(p)s)",
        {"b": board_id, "w": window, "p": period},
    )
    return {PeriodRef(r[0], r[1], r[2], r[3]) for r in await cur.fetchall()}


def _read_ahead(pages: AsyncIterator[list[FrozenEntry]]) -> AsyncIterator[list[FrozenEntry]]:
    """``pages``, read ahead so the source works while the COPY does; a failed read raises
    at the end, so a partial archive is never committed."""
    return read_ahead(pages, PAGES_AHEAD)


async def freeze(
    conn: Conn,
    ref: PeriodRef,
    start_ms: int,
    source: str,
    frozen_ms: int,
    pages: AsyncIterator[list[FrozenEntry]],
    progress: Progress | None = None,
    then: Callable[[Conn, int, int], Awaitable[None]] | None = None,
) -> int | None:
    """Archive a period's complete standings (``pages``, best first) in one transaction;
    returns the entries archived, or None if the period was frozen already. ``then``
    (connection, archive id, entries) runs last in the same transaction: what must happen
    exactly once with the freeze (a webhook's delivery, services/webhooks.py).

    The ``period_archives`` row is inserted first: a second freezer of the same period
    waits on it and then finds it taken, so a period is archived exactly once.
    """
    key = key_params(ref)
    async with conn.transaction():
        cur = await conn.execute(
            "INSERT INTO period_archives"
            " (board_id, win, period, segment, start_ms, entries, source, frozen_ms)"
            " VALUES (%(b)s, %(w)s, %(p)s, %(s)s, %(start)s, 0, %(source)s, %(frozen)s)"
            " ON CONFLICT DO NOTHING RETURNING archive_id",
            {**key, "start": start_ms, "source": source, "frozen": frozen_ms},
        )
        row = await cur.fetchone()
        if row is None:
            return None
        archive_id = int(row[0])
        rank = 0
        async with conn.cursor().copy(
            "COPY archive_entries (archive_id, rank, player_id, composite, score, achieved_ms,"
            " name, metadata) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(_COPY_TYPES)
            async for page in _read_ahead(pages):
                for player_id, composite, score, achieved_ms, name, metadata in page:
                    rank += 1
                    await copy.write_row(
                        (archive_id, rank, player_id, composite, score, achieved_ms, name, metadata)
                    )
                if progress is not None:
                    progress(len(page))
        await conn.execute(
            "UPDATE period_archives SET entries = %s WHERE archive_id = %s", (rank, archive_id)
        )
        if then is not None:
            await then(conn, archive_id, rank)
    return rank


async def mark_archived(conn: Conn, ref: PeriodRef, now_ms: int) -> None:
    """From now on the period is served from the archive (its keys may leave Redis)."""
    await conn.execute(
        f"UPDATE period_archives SET archived_ms = %(now)s WHERE {KEY_WHERE}",
        {**key_params(ref), "now": now_ms},
    )


async def thaw(conn: Conn, ref: PeriodRef) -> None:
    """Forget a period's archive: it is open again (its grace was raised)."""
    async with conn.transaction():
        cur = await conn.execute(
            f"DELETE FROM period_archives WHERE {KEY_WHERE} RETURNING archive_id", key_params(ref)
        )
        for (archive_id,) in await cur.fetchall():
            await conn.execute("DELETE FROM archive_entries WHERE archive_id = %s", (archive_id,))


async def player_best_pages(
    pg: PostgresStore, ref: PeriodRef, size: int = PAGE
) -> AsyncIterator[tuple[list[str], list[int], list[str | None], list[int], list[bytes | None]]]:
    """A period's durable copy in Redis's order (composite descending, then the member,
    exact time and player id, descending byte by byte, as a reversed ZRANGE orders equal
    scores; see codec.member), a page at a time,
    as columns: player ids, composites, names, exact achieved times and metadata. For a
    period whose
    Redis key is gone. Public entries only: banned players' entries stay out, as they stay
    out of the public key a freeze from Redis reads."""
    async with (
        pg.connection() as conn,
        conn.transaction(),
        conn.cursor(name="rankd_freeze") as cur,
    ):
        await cur.execute(
            "SELECT pb.player_id, pb.composite, pl.name, pb.achieved_ms, pb.metadata"
            " FROM player_best pb"
            " LEFT JOIN players pl ON pl.player_id = pb.player_id"
            " WHERE pb.board_id = %(b)s AND pb.win = %(w)s AND pb.period = %(p)s"
            "  AND pb.segment = %(s)s"
            "  AND NOT EXISTS (SELECT 1 FROM bans WHERE bans.player_id = pb.player_id"
            "   AND bans.banned)"
            " ORDER BY " + redis_order_sql("pb.player_id", "pb.achieved_ms", "pb.composite"),
            {"b": ref.board, "w": ref.window, "p": ref.period, "s": ref.segment},
        )
        while rows := await cur.fetchmany(size):
            yield (
                [r[0] for r in rows],
                [r[1] for r in rows],
                [r[2] for r in rows],
                [int(r[3]) for r in rows],
                [None if r[4] is None else str(r[4]).encode() for r in rows],
            )
