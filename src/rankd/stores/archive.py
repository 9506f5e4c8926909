"""The archive's reads: frozen final standings of closed periods, in PostgreSQL.

The season job (services/seasons.py, archive_job.py) freezes a closed period with ``COPY``: one row
per entry with its rank, so every read of an archived period is an indexed lookup, by rank
(the primary key) or by player (the index), never a scan or a ``count(*)``. A period's
total is kept in its ``period_archives`` row. Reads answer exactly what the Redis reads
answered for the period: the same ranks, entries and total.

Archives are keyed by board, window, period and segment (``''``: the global standings), so
segment standings freeze the same way once a ``PeriodRef`` names its segment.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rankd.periods import PeriodRef
from rankd.stores.postgres import PostgresStore

# (rank, player_id, score, achieved_ms, name) of one archived entry
ArchivedRow = tuple[int, str, int, int, str | None]
# (player_id, composite, score, achieved_ms, name, metadata JSON): one entry to freeze, in
# rank order
FrozenEntry = tuple[str, int, int, int, str | None, str | None]


def segment_of(ref: PeriodRef) -> str:
    """The ref's segment ("dim:value"), or "" for the global standings."""
    return ref.segment


def key_params(ref: PeriodRef) -> dict[str, str]:
    """The query parameters naming a period's archive (see KEY_WHERE)."""
    return {"b": ref.board, "w": ref.window, "p": ref.period, "s": segment_of(ref)}


KEY_WHERE = "board_id = %(b)s AND win = %(w)s AND period = %(p)s AND segment = %(s)s"
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
            {**key_params(ref), "viewer": viewer},
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

    async def metadata(self, ref: PeriodRef, player_ids: Sequence[str]) -> dict[str, bytes]:
        """The frozen metadata JSON of those of ``player_ids`` whose entry had some."""
        rows = await self._query(
            "SELECT e.player_id, e.metadata FROM archive_entries e"
            f" JOIN period_archives a ON a.archive_id = e.archive_id WHERE {_A_WHERE}"
            " AND e.player_id = ANY(%(ids)s) AND e.metadata IS NOT NULL",
            {**key_params(ref), "ids": list(player_ids)},
        )
        return {str(r[0]): str(r[1]).encode() for r in rows}

    async def _query(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        async with self.pg.connection() as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    async def state(self, ref: PeriodRef) -> ArchiveState | None:
        """The period's archive state; None: it was never frozen."""
        rows = await self._query(
            f"SELECT entries, archived_ms IS NOT NULL FROM period_archives WHERE {KEY_WHERE}",
            key_params(ref),
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
            {**key_params(ref), "first": offset + 1, "last": offset + count},
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
            {**key_params(ref), "player": player_id},
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
            {**key_params(ref), "player": player_id, "span": span},
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
            {**key_params(ref), "players": list(player_ids)},
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
            {**key_params(ref), "floor": floor},
        )
        if not rows or rows[0][0] is None:
            return 0, 0
        # hi only falls: the first row's (the total) is the largest, the last the count
        return int(rows[0][0]), int(rows[0][1])
