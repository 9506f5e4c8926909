"""What a board window lists besides its standings: its periods (GET /periods) and the
segment values with public entries in a period (GET /segments).

Both come from Redis while the periods are there, and from the archive's states and totals
once they have left (stores/archive.py); PostgreSQL being down only narrows the periods
listed to those Redis knows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from rankd.boards import BoardConfig
from rankd.errors import Unavailable
from rankd.formats import format_time
from rankd.periods import DAY_MS, ENDLESS, ROLLING, PeriodRef, period_at, rolling_first_day
from rankd.results import Head, PeriodInfo, Periods, Segments, SegmentValue
from rankd.schedules import SCHEDULED
from rankd.services.standings.archived import ArchiveStates
from rankd.stores import standings
from rankd.stores.archive import ArchiveState, ArchiveStore
from rankd.stores.redis.reads import Reads

# GET /segments: the segments of a period looked at (the durable copy's list, by index),
# and the values returned per dimension, most entries first
MAX_SEGMENTS_SCANNED = 10_000
MAX_SEGMENT_VALUES = 100


class Listings:
    def __init__(
        self,
        store: Reads,
        archive: ArchiveStore | None,
        states: ArchiveStates | None,
        clock: Callable[[], int],
    ) -> None:
        self.store = store
        self.archive = archive
        self.states = states
        self.clock = clock

    async def periods(self, board: BoardConfig, window: str) -> Periods:
        now_ms = self.clock()
        ids = set(await self.store.public_periods(board.board_id, window))
        upcoming = None
        if window == SCHEDULED and board.schedule is not None:
            # past occurrences with data, the open one, and the next (upcoming)
            for found in (board.schedule.occurrence_at(now_ms), board.schedule.next_after(now_ms)):
                if found is not None and found.start_ms > now_ms:
                    upcoming = found.id
                if found is not None:
                    ids.add(found.id)
        else:
            ids.add(period_at(window, now_ms).id)
        states: dict[str, ArchiveState] = {}
        if self.states is not None and window not in ENDLESS:
            # PostgreSQL down: list what Redis knows, open or closed
            with contextlib.suppress(Unavailable):
                states = await self.states.of_window(board.board_id, window)
        ids.update(states)
        periods = sorted((board.period_of(window, pid) for pid in ids), key=lambda p: -p.start_ms)
        infos: list[PeriodInfo] = [
            {
                "period": p.id,
                "status": "upcoming" if p.id == upcoming else board.period_status(p, now_ms),
                "starts_at": format_time(p.start_ms),
                "ends_at": format_time(p.end_ms),
            }
            for p in periods
        ]
        if window == ROLLING:  # the days it holds now, up to when the oldest leaves
            first = rolling_first_day(now_ms)
            infos[0]["starts_at"] = format_time(first * DAY_MS)
            infos[0]["ends_at"] = format_time((now_ms // DAY_MS + 1) * DAY_MS)
        for info in infos:
            state = states.get(info["period"])
            if info["status"] == "closed" and state is not None and state.archived:
                info["status"] = "archived"
        return {"board_id": board.board_id, "window": window, "periods": infos}

    async def segments(
        self, board: BoardConfig, ref: PeriodRef, head: Head, archived: bool
    ) -> Segments:
        """The values of each of the board's segment dimensions that have public entries in
        the period (banned and held players do not count), most entries first, at most
        MAX_SEGMENT_VALUES per dimension. The list comes from the durable copy (a value
        shows once the log consumer has applied its first run, within moments), the totals
        from Redis, or from the archive for an ``archived`` period."""
        totals: dict[str, int] = {}
        if board.segments and self.archive is not None:
            if archived:
                totals = await self.archive.segment_totals(ref.board, ref.window, ref.period)
            else:
                async with self.archive.pg.connection() as conn:
                    listed = await standings.segments_seen(
                        conn, ref.board, ref.window, ref.period, MAX_SEGMENTS_SCANNED
                    )
                refs = [PeriodRef(ref.board, ref.window, ref.period, s) for s in listed]
                totals = dict(zip(listed, await self.store.public_totals(refs), strict=True))
        found: dict[str, list[SegmentValue]] = {d: [] for d in board.segments}
        for segment, total in totals.items():
            dimension, _, value = segment.partition(":")
            if total > 0 and dimension in found:
                found[dimension].append({"value": value, "total": total})
        return {
            **head,
            "segments": [
                {
                    "dimension": d,
                    "values": sorted(values, key=lambda v: (-v["total"], v["value"]))[
                        :MAX_SEGMENT_VALUES
                    ],
                }
                for d, values in found.items()
            ],
        }
