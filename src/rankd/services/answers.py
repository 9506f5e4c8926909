"""The read answers' shapes, from standings rows (services/reads.py composes them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankd.formats import format_time
from rankd.results import Entry, PlayerStanding, Top
from rankd.services.standings import Row

if TYPE_CHECKING:
    from rankd.services.scope import Scope


def total_of(found: tuple[object, int]) -> int:
    return found[1]


def entry_of(row: Row) -> Entry:
    return {
        "rank": row.rank,
        "player_id": row.player_id,
        "score": row.score,
        "achieved_at": format_time(row.achieved_ms),
        "name": row.name,
    }


def listed(scope: Scope, rows: list[Row], total: int) -> Top:
    """A top list's or an around read's answer (the same shape)."""
    return {**scope.head, "total": total, "entries": [entry_of(row) for row in rows]}


def percentile(rank: int, total: int) -> float:
    """Share of entries ranked at or below ``rank``, 0..100."""
    return round(100.0 * (total - rank + 1) / total, 4)


def standing_of(scope: Scope, row: Row, total: int) -> PlayerStanding:
    return {
        **scope.head,
        **entry_of(row),
        "total": total,
        "percentile": percentile(row.rank, total),
    }


@dataclass(frozen=True, slots=True)
class Next:
    """Where the page after a top list starts (its cursor's content, rankd/cursors.py)."""

    offset: int  # 0-based index of its first entry
    position: tuple[str, int, int] | None  # the last entry's, on a live public list
    viewer: str  # "" for the public list; an own view pages by offset


def following(rows: list[Row], total: int, viewer: str | None = None) -> Next | None:
    """The page after ``rows``; None when they are the last (or no) entries."""
    if not rows or rows[-1].rank >= total:
        return None
    last = rows[-1]
    own = viewer is not None
    return Next(last.rank, None if own else last.position, viewer or "")
