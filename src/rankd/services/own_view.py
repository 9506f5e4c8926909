"""A player's own view: the public standings with their hidden entry where it would stand.

A banned player's entry lives on :shadow and a held run on :pending; public reads never see
them. A game server may ask for a player's own view (``viewer``), in which that player
appears at the rank they would take if published: one plus the public entries above them
(ties as Redis orders equal scores). Everyone else keeps their order; those at or below the
viewer move down one, except that a viewer's own public entry (when a held run is better)
is no longer shown twice. Pure composition: the reads fetch the rows, this places them.
"""

from __future__ import annotations

from dataclasses import dataclass

NOWHERE = 1 << 62  # "no public entry": an index past any board

# (player_id, composite, exact achieved ms or 0, 0-based public index)
Row = tuple[str, int, int, int]


@dataclass(frozen=True, slots=True)
class OwnView:
    viewer: str
    composite: int
    achieved_ms: int
    index: int  # the viewer's 0-based index in the view
    public_index: int  # the viewer's own public entry's 0-based index, or NOWHERE
    public_total: int

    @property
    def total(self) -> int:
        return self.public_total + (1 if self.public_index == NOWHERE else 0)

    def view_index(self, public_index: int) -> int:
        """Where a public entry (not the viewer's) stands in the view."""
        return public_index + 1 if self.index <= public_index < self.public_index else public_index

    def public_span(self, first: int, count: int) -> tuple[int, int]:
        """The public slice (offset, count) holding every entry of view indexes
        ``first .. first + count - 1``: one more each side, for the shift and the
        viewer's own public entry."""
        start = max(0, first - 1)
        return start, first + count + 1 - start

    def place(self, rows: list[Row], first: int, count: int) -> list[tuple[str, int, int, int]]:
        """The view's entries at indexes ``first .. first + count - 1`` as (player_id,
        composite, achieved ms, 1-based rank), from public rows covering ``public_span``."""
        placed = [
            (pid, composite, at, self.view_index(p) + 1)
            for pid, composite, at, p in rows
            if pid != self.viewer
        ]
        placed.append((self.viewer, self.composite, self.achieved_ms, self.index + 1))
        placed.sort(key=lambda row: row[3])
        return [row for row in placed if first < row[3] <= first + count]
