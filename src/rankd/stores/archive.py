"""The archive: frozen final standings of closed periods, in PostgreSQL.

The season job (services/seasons.py) freezes a closed period here with ``COPY``: one row
per entry with its rank, so every read of an archived period is an indexed lookup, by rank
(the primary key) or by player (the index), never a scan or a ``count(*)``. A period's
total is kept in its ``period_archives`` row. Reads answer exactly what the Redis reads
answered for the period: the same ranks, entries and total.

Archives are keyed by board, window, period and segment (``''``: the global standings), so
segment standings freeze the same way once a ``PeriodRef`` names its segment.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from rankd.aio import read_ahead
from rankd.periods import ALL_TIME, PeriodRef
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.standings import redis_order_sql

# (rank, player_id, score, achieved_ms, name) of one archived entry
ArchivedRow = tuple[int, str, int, int, str | None]
# (player_id, composite, score, achieved_ms, name): one entry to freeze, in rank order
FrozenEntry = tuple[str, int, int, int, str | None]
Progress = Callable[[int], None]

# Binary COPY: PostgreSQL parses it faster than text, and psycopg formats it in C.
_COPY_TYPES = ["int8", "int4", "text", "int8", "int8", "int8", "text"]
PAGE = 10_000  # entries per page read from player_best
PAGES_AHEAD = 4  # pages read ahead of the COPY (Redis or PostgreSQL works meanwhile)
# Longest period of any window (a month), for bounding the job's scan by period start.
LONGEST_PERIOD_MS = 31 * 86_400_000


def segment_of(ref: PeriodRef) -> str:
    """The ref's segment ("dim:value"), or "" for the global standings."""
    return ref.segment


def _key(ref: PeriodRef) -> dict[str, str]:
    return {"b": ref.board, "w": ref.window, "p": ref.period, "s": segment_of(ref)}


_WHERE = "board_id = %(b)s AND win = %(w)s AND period = %(p)s AND segment = %(s)s"
_A_WHERE = "a.board_id = %(b)s AND a.win = %(w)s AND a.period = %(p)s AND a.segment = %(s)s"
_ROW = "e.rank, e.player_id, e.score, e.achieved_ms, e.name"


@dataclass(frozen=True, slots=True)
class ArchiveState:
    """A frozen period: its total, and whether it has left Redis (status ``archived``)."""

    entries: int
    archived: bool


def _row(raw: Sequence[Any]) -> ArchivedRow:
    return (int(raw[0]), str(raw[1]), int(raw[2]), int(raw[3]), raw[4])


@dataclass(frozen=True, slots=True)
class Hidden:
    """The entries of an archived period whose players are banned now: public reads leave
    them out and rank everyone else as if they had never been there (an unban brings them
    back). Bans are few, so this is a short list read per request by index."""

    ranks: tuple[int, ...] = ()  # ascending
    composites: tuple[int, ...] = ()

    def shown_rank(self, rank: int) -> int:
        return rank - bisect_left(self.ranks, rank)

    def raw_rank(self, shown: int) -> int:
        """The archived rank of the entry shown at ``shown`` (1-based)."""
        rank = shown
        while (moved := shown + bisect_right(self.ranks, rank)) != rank:
            rank = moved
        return rank

    def shown(self, rows: list[ArchivedRow]) -> list[ArchivedRow]:
        return [(self.shown_rank(r[0]), *r[1:]) for r in rows if not self.hides(r[0])]

    def hides(self, rank: int) -> bool:
        at = bisect_left(self.ranks, rank)
        return at < len(self.ranks) and self.ranks[at] == rank


class ArchiveStore:
    """Reads of archived periods: one query each, by the period's key (``period_archives``)
    and then by rank or player (``archive_entries``' primary key and index), plus one for
    the banned players among the entries (``Hidden``)."""

    def __init__(self, pg: PostgresStore) -> None:
        self.pg = pg

    async def hidden(self, ref: PeriodRef, viewer: str | None = None) -> Hidden:
        """The banned players' entries, but the ``viewer``'s: a player's own view shows
        them where they stand, banned or not (as in live periods)."""
        rows = await self._query(
            "SELECT e.rank, e.composite FROM period_archives a"
            " JOIN archive_entries e ON e.archive_id = a.archive_id"
            " JOIN bans b ON b.player_id = e.player_id AND b.banned"
            f" WHERE {_A_WHERE} AND e.player_id IS DISTINCT FROM %(viewer)s ORDER BY e.rank",
            {**_key(ref), "viewer": viewer},
        )
        return Hidden(tuple(int(r[0]) for r in rows), tuple(int(r[1]) for r in rows))

    async def top(
        self, ref: PeriodRef, offset: int, count: int, viewer: str | None = None
    ) -> tuple[list[ArchivedRow], int]:
        """``count`` entries from rank ``offset + 1``, and the period's total (banned
        players left out)."""
        hidden = await self.hidden(ref, viewer)
        if not hidden.ranks:
            return await self._top(ref, offset, count)
        first = hidden.raw_rank(offset + 1)
        rows, total = await self._top(ref, first - 1, count + len(hidden.ranks))
        return hidden.shown(rows)[:count], total - len(hidden.ranks)

    async def entry(
        self, ref: PeriodRef, player_id: str, viewer: str | None = None
    ) -> tuple[ArchivedRow | None, int]:
        """A player's archived entry (None: not ranked, or banned) and the period's total."""
        hidden = await self.hidden(ref, viewer)
        row, total = await self._entry(ref, player_id)
        shown = hidden.shown([row]) if row is not None else []
        return (shown[0] if shown else None), total - len(hidden.ranks)

    async def around(
        self, ref: PeriodRef, player_id: str, span: int, viewer: str | None = None
    ) -> tuple[list[ArchivedRow], int] | None:
        """The player's entry and up to ``span`` either side, and the total; None: not
        ranked (or banned)."""
        hidden = await self.hidden(ref, viewer)
        found = await self._around(ref, player_id, span + len(hidden.ranks))
        if found is None:
            return None
        rows, total = found
        shown = hidden.shown(rows)
        mine = [i for i, r in enumerate(shown) if r[1] == player_id]
        if not mine:
            return None
        at = mine[0]
        return shown[max(0, at - span) : at + span + 1], total - len(hidden.ranks)

    async def group(
        self, ref: PeriodRef, player_ids: Sequence[str], viewer: str | None = None
    ) -> list[ArchivedRow]:
        """The archived entries of those of ``player_ids`` that have one, best first."""
        hidden = await self.hidden(ref, viewer)
        return hidden.shown(await self._group(ref, player_ids))

    async def count_from(
        self, ref: PeriodRef, floor: int, viewer: str | None = None
    ) -> tuple[int, int]:
        """(shown entries with a composite of at least ``floor``, shown total)."""
        hidden = await self.hidden(ref, viewer)
        above, total = await self._count_from(ref, floor)
        hidden_above = sum(1 for c in hidden.composites if c >= floor)
        return above - hidden_above, total - len(hidden.ranks)

    async def _query(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        async with self.pg.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    async def state(self, ref: PeriodRef) -> ArchiveState | None:
        """The period's archive state; None: it was never frozen."""
        rows = await self._query(
            f"SELECT entries, archived_ms IS NOT NULL FROM period_archives WHERE {_WHERE}",
            _key(ref),
        )
        return None if not rows else ArchiveState(int(rows[0][0]), bool(rows[0][1]))

    async def segment_totals(self, board_id: str, window: str, period: str) -> dict[str, int]:
        """Each frozen segment of a board period ("dim:value") and its public total: the
        archived entries less those of players banned now (bans are few: one index lookup
        per banned player)."""
        rows = await self._query(
            "SELECT a.segment, a.entries - (SELECT count(*) FROM archive_entries e"
            "  JOIN bans b ON b.player_id = e.player_id AND b.banned"
            "  WHERE e.archive_id = a.archive_id)"
            " FROM period_archives a WHERE a.board_id = %(b)s AND a.win = %(w)s"
            " AND a.period = %(p)s AND a.segment <> ''",
            {"b": board_id, "w": window, "p": period},
        )
        return {r[0]: int(r[1]) for r in rows}

    async def frozen_periods(self, board_id: str, window: str) -> frozenset[str]:
        """The ids of the board window's periods frozen in any standings (one index scan)."""
        rows = await self._query(
            "SELECT DISTINCT period FROM period_archives WHERE board_id = %(b)s AND win = %(w)s",
            {"b": board_id, "w": window},
        )
        return frozenset(str(r[0]) for r in rows)

    async def period_states(
        self, board_id: str, window: str, period: str
    ) -> dict[str, ArchiveState]:
        """Every frozen standings of one period (the global one is ""), by segment."""
        rows = await self._query(
            "SELECT segment, entries, archived_ms IS NOT NULL FROM period_archives"
            " WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s",
            {"b": board_id, "w": window, "p": period},
        )
        return {str(r[0]): ArchiveState(int(r[1]), bool(r[2])) for r in rows}

    async def states(
        self, board_id: str, window: str, segment: str = ""
    ) -> dict[str, ArchiveState]:
        """Every frozen period of a board window, by period id."""
        rows = await self._query(
            "SELECT period, entries, archived_ms IS NOT NULL FROM period_archives"
            " WHERE board_id = %(b)s AND win = %(w)s AND segment = %(s)s",
            {"b": board_id, "w": window, "s": segment},
        )
        return {r[0]: ArchiveState(int(r[1]), bool(r[2])) for r in rows}

    async def _top(self, ref: PeriodRef, offset: int, count: int) -> tuple[list[ArchivedRow], int]:
        rows = await self._query(
            f"SELECT a.entries, {_ROW} FROM period_archives a"
            " LEFT JOIN archive_entries e ON e.archive_id = a.archive_id"
            "  AND e.rank BETWEEN %(first)s AND %(last)s"
            f" WHERE {_A_WHERE} ORDER BY e.rank",
            {**_key(ref), "first": offset + 1, "last": offset + count},
        )
        if not rows:
            return [], 0
        return [_row(r[1:]) for r in rows if r[1] is not None], int(rows[0][0])

    async def _entry(self, ref: PeriodRef, player_id: str) -> tuple[ArchivedRow | None, int]:
        rows = await self._query(
            f"SELECT a.entries, {_ROW} FROM period_archives a"
            " LEFT JOIN archive_entries e ON e.archive_id = a.archive_id"
            "  AND e.player_id = %(player)s"
            f" WHERE {_A_WHERE}",
            {**_key(ref), "player": player_id},
        )
        if not rows:
            return None, 0
        found = rows[0]
        return (None if found[1] is None else _row(found[1:])), int(found[0])

    async def _around(
        self, ref: PeriodRef, player_id: str, span: int
    ) -> tuple[list[ArchivedRow], int] | None:
        rows = await self._query(
            f"SELECT a.entries, {_ROW} FROM period_archives a"
            " JOIN archive_entries me ON me.archive_id = a.archive_id"
            "  AND me.player_id = %(player)s"
            " JOIN archive_entries e ON e.archive_id = a.archive_id"
            "  AND e.rank BETWEEN me.rank - %(span)s AND me.rank + %(span)s"
            f" WHERE {_A_WHERE} ORDER BY e.rank",
            {**_key(ref), "player": player_id, "span": span},
        )
        if not rows:
            return None
        return [_row(r[1:]) for r in rows], int(rows[0][0])

    async def _group(self, ref: PeriodRef, player_ids: Sequence[str]) -> list[ArchivedRow]:
        rows = await self._query(
            f"SELECT {_ROW} FROM period_archives a"
            " JOIN archive_entries e ON e.archive_id = a.archive_id"
            "  AND e.player_id = ANY(%(players)s)"
            f" WHERE {_A_WHERE} ORDER BY e.rank",
            {**_key(ref), "players": list(player_ids)},
        )
        return [_row(r) for r in rows]

    async def _count_from(self, ref: PeriodRef, floor: int) -> tuple[int, int]:
        """(entries with a composite of at least ``floor``, total), as ZCOUNT answers it.

        Composites fall as ranks rise, so the count is the last rank still at or above the
        floor: a binary search over the rank index (about log2(total) lookups, all inside
        PostgreSQL) instead of counting rows.
        """
        rows = await self._query(
            "WITH RECURSIVE search(id, lo, hi) AS ("
            f"  SELECT a.archive_id, 0, a.entries FROM period_archives a WHERE {_A_WHERE}"
            " UNION ALL"
            "  SELECT s.id,"
            "   CASE WHEN e.composite >= %(floor)s THEN e.rank ELSE s.lo END,"
            "   CASE WHEN e.composite >= %(floor)s THEN s.hi ELSE e.rank - 1 END"
            "  FROM search s JOIN archive_entries e"
            "   ON e.archive_id = s.id AND e.rank = (s.lo + s.hi + 1) / 2"
            "  WHERE s.lo < s.hi"
            ")"
            " SELECT min(hi), max(hi) FROM search",
            {**_key(ref), "floor": floor},
        )
        if not rows or rows[0][0] is None:
            return 0, 0
        # hi only falls: the first row's (the total) is the largest, the last the count
        return int(rows[0][0]), int(rows[0][1])


# --- the season job's side: listing, freezing, leaving Redis, thawing ---------------------


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
        " WHERE ps.win <> %(all_time)s"
        "   AND (%(boards)s::text[] IS NULL OR ps.board_id = ANY(%(boards)s))"
        "   AND (a.archived_ms IS NULL OR ps.start_ms + %(longest)s"
        "        + (b.config->>'grace_seconds')::bigint * 1000 > %(now)s)"
        " ORDER BY ps.start_ms, ps.board_id, ps.win",
        {
            "all_time": ALL_TIME,
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
) -> int | None:
    """Archive a period's complete standings (``pages``, best first) in one transaction;
    returns the entries archived, or None if the period was frozen already.

    The ``period_archives`` row is inserted first: a second freezer of the same period
    waits on it and then finds it taken, so a period is archived exactly once.
    """
    key = _key(ref)
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
            " name) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(_COPY_TYPES)
            async for page in _read_ahead(pages):
                for player_id, composite, score, achieved_ms, name in page:
                    rank += 1
                    await copy.write_row(
                        (archive_id, rank, player_id, composite, score, achieved_ms, name)
                    )
                if progress is not None:
                    progress(len(page))
        await conn.execute(
            "UPDATE period_archives SET entries = %s WHERE archive_id = %s", (rank, archive_id)
        )
    return rank


async def mark_archived(conn: Conn, ref: PeriodRef, now_ms: int) -> None:
    """From now on the period is served from the archive (its keys may leave Redis)."""
    await conn.execute(
        f"UPDATE period_archives SET archived_ms = %(now)s WHERE {_WHERE}",
        {**_key(ref), "now": now_ms},
    )


async def thaw(conn: Conn, ref: PeriodRef) -> None:
    """Forget a period's archive: it is open again (its grace was raised)."""
    async with conn.transaction():
        cur = await conn.execute(
            f"DELETE FROM period_archives WHERE {_WHERE} RETURNING archive_id", _key(ref)
        )
        for (archive_id,) in await cur.fetchall():
            await conn.execute("DELETE FROM archive_entries WHERE archive_id = %s", (archive_id,))


async def player_best_pages(
    pg: PostgresStore, ref: PeriodRef, size: int = PAGE
) -> AsyncIterator[tuple[list[str], list[int], list[str | None], list[int]]]:
    """A period's durable copy in Redis's order (composite descending, then the member,
    exact time and player id, descending byte by byte, as a reversed ZRANGE orders equal
    scores; see codec.member), a page at a time,
    as columns: player ids, composites, names and exact achieved times. For a period whose
    Redis key is gone. Public entries only: banned players' entries stay out, as they stay
    out of the public key a freeze from Redis reads."""
    async with (
        pg.connection() as conn,
        conn.transaction(),
        conn.cursor(name="rankd_freeze") as cur,
    ):
        await cur.execute(
            "SELECT pb.player_id, pb.composite, pl.name, pb.achieved_ms FROM player_best pb"
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
            )
