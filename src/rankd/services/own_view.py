"""A player's own view: the public standings with their hidden entry where it would stand.

A banned player's entry lives on :shadow and a held run on :pending; public reads never see
them. A game server may ask for a player's own view (``viewer``), in which that player
appears at the rank they would take if published: one plus the public entries above them
(ties as Redis orders equal scores). Everyone else keeps their order; those at or below the
viewer move down one, except that a viewer's own public entry (when a held run is better)
is no longer shown twice. Composition only: a standings source (services/standings/) gives
the public rows and the viewer's hidden entry, this places them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rankd.services.standings.row import Row


class PublicRows(Protocol):
    """What a view is composed from: a standings source's public rows
    (services/standings/ Standings has these and more)."""

    async def top(self, offset: int, count: int) -> tuple[list[Row], int]: ...

    async def entry(self, player_id: str) -> tuple[Row | None, int]: ...


NOWHERE = 1 << 62  # "no public entry": an index past any board


@dataclass(frozen=True, slots=True)
class OwnView:
    own: Row  # the viewer's hidden entry, at the rank it would take
    public_index: int  # the viewer's own public entry's 0-based index, or NOWHERE
    public_total: int

    @property
    def viewer(self) -> str:
        return self.own.player_id

    @property
    def index(self) -> int:
        """The viewer's 0-based index in the view."""
        return self.own.rank - 1

    @property
    def total(self) -> int:
        return self.public_total + (1 if self.public_index == NOWHERE else 0)

    def view_index(self, public_index: int) -> int:
        """Where a public entry (not the viewer's) stands in the view."""
        return public_index + 1 if self.index <= public_index < self.public_index else public_index

    def shown(self, row: Row) -> Row:
        """A public row (not the viewer's) with its rank in the view."""
        return row._replace(rank=self.view_index(row.rank - 1) + 1)

    def public_span(self, first: int, count: int) -> tuple[int, int]:
        """The public slice (offset, count) holding every entry of view indexes
        ``first .. first + count - 1``: one more each side, for the shift and the
        viewer's own public entry."""
        start = max(0, first - 1)
        return start, first + count + 1 - start

    def place(self, rows: list[Row], first: int, count: int) -> list[Row]:
        """The view's rows at indexes ``first .. first + count - 1``, from public rows
        covering ``public_span``."""
        placed = [self.shown(row) for row in rows if row.player_id != self.viewer]
        placed.append(self.own)
        placed.sort(key=lambda row: row.rank)
        return [row for row in placed if first < row.rank <= first + count]

    def among(self, rows: list[Row], player_ids: Sequence[str]) -> list[Row]:
        """A group's rows (``player_ids``' public ones) in the view, best first."""
        shown = [self.shown(row) for row in rows if row.player_id != self.viewer]
        if self.viewer in player_ids:
            shown.append(self.own)
        shown.sort(key=lambda row: row.rank)
        return shown

    async def rows(self, source: PublicRows, first: int, count: int) -> tuple[list[Row], int]:
        """The view's rows at indexes ``first .. first + count - 1`` from ``source``'s
        public ones, and the view's total."""
        start, span = self.public_span(first, count)
        rows, _ = await source.top(start, span)
        return self.place(rows, first, count), self.total

    async def entry(self, source: PublicRows, player_id: str) -> Row | None:
        """A player's row in the view (None: not ranked)."""
        if player_id == self.viewer:
            return self.own
        row, _ = await source.entry(player_id)
        return None if row is None else self.shown(row)
