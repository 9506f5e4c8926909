"""The periods a player may have a live entry in that the durable copy does not list yet:
what a ban's or an erasure's sweep must reach besides the copy's own rows."""

from __future__ import annotations

import time
from collections.abc import Iterable

from rankd.boards import BoardConfig
from rankd.periods import PeriodRef
from rankd.stores.redis.profiles import Profiles


async def player_refs(
    profiles: Profiles, player_id: str, boards: Iterable[BoardConfig]
) -> set[PeriodRef]:
    """Every board's live periods (open, or within their grace), globally and in the
    segments of the player's profile."""
    [profile] = await profiles.profile_segments([player_id])
    now = int(time.time() * 1000)
    refs: set[PeriodRef] = set()
    for board in boards:
        segments = [""] + [f"{d}:{v}" for d, v in profile.items() if d in board.segments]
        grace_ms = board.grace_seconds * 1000
        for window in board.windows:
            at = (board.period_at(window, now), board.period_at(window, now - grace_ms))
            for period in {p for p in at if p is not None}:
                for segment in segments:
                    refs.add(PeriodRef(board.board_id, window, period.id, segment))
    return refs
