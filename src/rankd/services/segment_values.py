"""A bound on the distinct values of each segment dimension of a board.

Every new segment value makes standings keys (and their exact-times hashes) in every window
of the board, so a client sending a unique value per run grew Redis without end (about 45
MB for 5,000 runs). Each dimension of a board takes at most ``max_values`` distinct values
(RANKD_SEGMENT_VALUES_MAX, 10,000): a run whose value (its own, or its player's profile's)
would pass it is refused with 400 ``invalid_request`` and changes nothing; values already
taken stay usable.

The values are counted in Redis (one set per dimension in the board's hash tag, one script
call per submit; about 60 bytes a value). A Redis that lost the sets restores them from
PostgreSQL's ``periods_seen`` (the segments that have entries) before the next submit; runs
not yet applied there may let a few values past the bound after such a loss.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rankd.boards import BoardConfig
from rankd.errors import InvalidRequest
from rankd.formats import clip
from rankd.runs import Run
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.admission import Admission


class SegmentValues:
    def __init__(self, store: Admission, pg: PostgresStore, max_values: int = 10_000) -> None:
        self.store = store
        self.pg = pg
        self.max_values = max_values
        self._restoring: dict[str, asyncio.Lock] = {}

    async def admit(self, board: BoardConfig, runs: Sequence[Run]) -> list[InvalidRequest | None]:
        """Per run: None when its segment values fit the bound (they are now counted), else
        the error refusing it."""
        if not board.segments or not any(r.segments for r in runs):
            return [None] * len(runs)
        for _ in range(3):
            fits = await self.store.admit_segment_values(
                board.board_id, board.segments, self.max_values, [r.segments for r in runs]
            )
            if fits is not None:
                break
            await self.restore(board)
        else:
            raise AssertionError("the segment value sets did not stay restored")  # pragma: no cover
        return [None if ok else self._refusal(run) for run, ok in zip(runs, fits, strict=True)]

    def _refusal(self, run: Run) -> InvalidRequest:
        shown = ", ".join(f"{d}:{clip(v)}" for d, v in run.segments)
        return InvalidRequest(
            f"segments {shown}: a dimension of this board already has {self.max_values}"
            " distinct values, its limit; use a value it has"
        )

    async def restore(self, board: BoardConfig) -> None:
        lock = self._restoring.setdefault(board.board_id, asyncio.Lock())
        async with lock:
            found: dict[str, set[str]] = {d: set() for d in board.segments}
            async with self.pg.connection() as conn:
                cur = await conn.execute(
                    "SELECT DISTINCT segment FROM periods_seen"
                    " WHERE board_id = %s AND segment <> ''",
                    (board.board_id,),
                )
                for (segment,) in await cur.fetchall():
                    dimension, _, value = str(segment).partition(":")
                    if dimension in found:
                        found[dimension].add(value)
            await self.store.restore_segment_values(board.board_id, found)
