"""The one row type every standings source gives (see __init__.py)."""

from __future__ import annotations

from typing import NamedTuple


class Row(NamedTuple):
    """One entry of a period's standings, as every source gives it. Immutable; a named
    tuple rather than a frozen dataclass because a top list builds hundreds of them and a
    frozen dataclass's constructor costs about three times as much."""

    rank: int  # 1-based
    player_id: str
    score: int
    # when the score was reached, to the millisecond (an entry from before exact times were
    # kept: the start of its tie bucket)
    achieved_ms: int
    name: str | None  # the display name (an archived period's: as it was frozen)
    # where a live row sorts in Redis: (player id, composite, exact ms as stored, 0 for none),
    # what a cursor's position holds (rankd/cursors.py); None from the archive
    position: tuple[str, int, int] | None = None
