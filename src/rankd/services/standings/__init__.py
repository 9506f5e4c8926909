"""One standings interface for every read: a board period's ranked entries, wherever they are.

A read (services/reads.py) asks one ``Standings`` for the top list, a player's entry, the
players around one, a group (friends), how many stand at or above a composite (rank-of) and
the total, and gets rows of one type back. Three sources answer:

* ``KeyStandings`` (live.py): one Redis sorted set, a period of an unsharded board;
* ``ShardedStandings`` (live.py): a sharded board's period, merged over its shards
  (stores/redis/sharded.py); the one source that can also estimate a rank (``accuracy=approx``);
* ``ArchiveStandings`` (archived.py): a closed period frozen in PostgreSQL once it has left
  Redis (stores/archive.py).

Each answers exactly what the others would for the same entries: the same ranks (ties in
Redis's order, see codec.member), rows and totals. Each shows the public standings: banned
players' entries and held runs are left out, and a viewer's own view (own_view.py) says
where their hidden entry would stand. The reader picks the source once per request
(``Reader.standings``) and composes the own view, the response shapes and the top-list
cache on top, so no read is written once per source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from rankd.services.standings.row import Row as Row

if TYPE_CHECKING:
    from rankd.services.own_view import OwnView


class Standings(Protocol):
    """A board period's public standings."""

    # Whether the answers are the archive's: a read never turns elsewhere from them, and
    # a viewer's are their own (a banned viewer sees their entry), so not shared.
    archived: bool

    async def top(self, offset: int, count: int) -> tuple[list[Row], int]:
        """``count`` rows from rank ``offset + 1``, and the total."""
        ...

    async def entry(self, player_id: str) -> tuple[Row | None, int]:
        """The player's row (None: not ranked), and the total."""
        ...

    async def around(self, player_id: str, span: int) -> tuple[list[Row], int] | None:
        """The player's row and up to ``span`` either side, and the total; None: the
        player is not ranked."""
        ...

    async def group(self, player_ids: Sequence[str]) -> list[Row]:
        """The rows of those of ``player_ids`` that are ranked, best first."""
        ...

    async def count_from(self, floor: int) -> tuple[int, int]:
        """(rows with a composite of at least ``floor``, total): what rank-of counts."""
        ...

    async def total(self) -> int:
        """How many rows the standings hold."""
        ...

    async def metadata(self, entries: Sequence[tuple[str, int]]) -> list[bytes | None]:
        """The metadata JSON of each (player id, exact achieved ms) entry (None: none)."""
        ...

    async def own_view(self, viewer: str) -> OwnView | None:
        """The viewer's own view when it differs from the public one (their entry is on
        :shadow or :pending); None when the public view is theirs too."""
        ...
