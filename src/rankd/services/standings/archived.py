"""The archived standings: a closed period frozen in PostgreSQL once it has left Redis.

``ArchiveStandings`` answers from stores/archive.py, which keeps each entry's rank, name
and total as they were frozen and leaves out the players banned since (but the viewer's
own entry: a banned player still sees themselves). ``ArchiveStates`` tells the reader which
closed periods are frozen or archived, from memory for almost every read.
"""

from __future__ import annotations

from collections.abc import Sequence

from rankd.periods import PeriodRef
from rankd.services.own_view import OwnView
from rankd.services.standings import Row
from rankd.stores.archive import ArchiveState, ArchiveStore
from rankd.ttlcache import TTLCache

_STATE_BYTES = 300  # a cached archive state: its key tuple and the small state object
_PERIOD_STATE_BYTES = 120  # one period's (or segment's) state in a cached listing
_PERIOD_ID_BYTES = 70  # one period id in a cached set of frozen periods
# A read that finds a closed period's key gone re-reads its archive state if what this
# process knows is older than this: a just-archived period turns to the archive within
# a second, and reads of closed periods that never had data cost PostgreSQL one query per
# period and second, however many arrive.
RECHECK_S = 1.0


class ArchiveStandings:
    """An archived period's standings, as ``viewer`` (None: the public) sees them."""

    archived = True

    def __init__(self, archive: ArchiveStore, ref: PeriodRef, viewer: str | None) -> None:
        self.archive = archive
        self.ref = ref
        self.viewer = viewer

    async def top(self, offset: int, count: int) -> tuple[list[Row], int]:
        rows, total = await self.archive.top(self.ref, offset, count, self.viewer)
        return [Row(*row) for row in rows], total

    async def entry(self, player_id: str) -> tuple[Row | None, int]:
        row, total = await self.archive.entry(self.ref, player_id, self.viewer)
        return (None if row is None else Row(*row)), total

    async def around(self, player_id: str, span: int) -> tuple[list[Row], int] | None:
        found = await self.archive.around(self.ref, player_id, span, self.viewer)
        if found is None:
            return None
        rows, total = found
        return [Row(*row) for row in rows], total

    async def group(self, player_ids: Sequence[str]) -> list[Row]:
        return [Row(*row) for row in await self.archive.group(self.ref, player_ids, self.viewer)]

    async def count_from(self, floor: int) -> tuple[int, int]:
        return await self.archive.count_from(self.ref, floor, self.viewer)

    async def metadata(self, entries: Sequence[tuple[str, int]]) -> list[bytes | None]:
        found = await self.archive.metadata(self.ref, [player for player, _ in entries])
        return [found.get(player) for player, _ in entries]

    async def total(self) -> int:
        _, total = await self.archive.top(self.ref, 0, 0, self.viewer)
        return total

    async def own_view(self, viewer: str) -> OwnView | None:
        return None  # the frozen final results, the viewer's own entry shown where it stands


class ArchiveStates:
    """Whether closed periods are frozen or have left Redis, cached in two levels so a read
    of a period never frozen, or of a segment value nobody has, is answered from memory:
    the frozen period ids of a board window (one query), then the frozen segments of one
    of those periods (one query each). States only move forward (a raised grace reopens a
    period, which reads decide without this), and a read that finds a Redis key gone asks
    again (``recheck``), so a stale answer costs little."""

    def __init__(self, archive: ArchiveStore, ttl_s: float, max_bytes: int) -> None:
        self.archive = archive
        self._frozen: TTLCache[tuple[str, str], frozenset[str]] = TTLCache(
            ttl_s, max_bytes, lambda _, ids: _STATE_BYTES + _PERIOD_ID_BYTES * len(ids)
        )
        self._states: TTLCache[tuple[str, str, str], dict[str, ArchiveState]] = TTLCache(
            ttl_s, max_bytes, lambda _, states: _STATE_BYTES + _PERIOD_STATE_BYTES * len(states)
        )
        self._listed: TTLCache[tuple[str, str], dict[str, ArchiveState]] = TTLCache(
            ttl_s, max_bytes, lambda _, states: _STATE_BYTES + _PERIOD_STATE_BYTES * len(states)
        )

    async def state(self, ref: PeriodRef, *, recheck: bool = False) -> ArchiveState | None:
        """The period's archive state (None: never frozen): with ``recheck``, at most one
        PostgreSQL query per board window and per frozen period every RECHECK_S, whatever
        segment values or period ids the reads name; else as long as the cache keeps it."""
        window = (ref.board, ref.window)
        frozen = self._frozen.get(window)
        if frozen is None or (recheck and frozen.age_s >= RECHECK_S):
            ids = await self.archive.frozen_periods(ref.board, ref.window)
            self._frozen.put(window, ids)
        else:
            ids = frozen.value
        if ref.period not in ids:
            return None
        period = (ref.board, ref.window, ref.period)
        hit = self._states.get(period)
        if hit is None or (recheck and hit.age_s >= RECHECK_S):
            states = await self.archive.period_states(*period)
            self._states.put(period, states)
        else:
            states = hit.value
        return states.get(ref.segment)

    async def of_window(self, board_id: str, window: str) -> dict[str, ArchiveState]:
        """Every frozen period of a board window's global standings, by period id; at most
        RECHECK_S old, as a read's recheck: a period the season job archives leaves Redis,
        so a listing from before would leave it out of GET /periods altogether."""
        hit = self._listed.get((board_id, window))
        if hit is not None and hit.age_s < RECHECK_S:
            return hit.value
        states = await self.archive.states(board_id, window)
        self._listed.put((board_id, window), states)
        return states
