"""The live standings: a period in Redis, one sorted set or a sharded board's shards.

Both sources read (player id, composite, exact achieved ms or 0) triples with their 0-based
ranks, one round trip each as the stores make them, and turn them into rows the same way:
the score unpacked from the composite by the window's codec, the exact time (an entry from
before exact times were kept: its tie bucket's start), and the name from the names cache
(services/names.py; a group read fetches its names in its own round trip). This is the one
module that calls the Redis store's standings reads (top, entry, around, group, own,
count_from, public_totals, shard_entry); services/listings.py asks it for the period and
segment totals of its lists.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from rankd.codec import Codec
from rankd.periods import PeriodRef
from rankd.services.approx import Histograms
from rankd.services.names import NameCache
from rankd.services.own_view import NOWHERE, OwnView
from rankd.services.standings import Row
from rankd.stores.redis.common import Own, Rows
from rankd.stores.redis.reads import Reads

# (composite, 0-based rank, exact achieved ms or 0) of one player's entry
Held = tuple[int, int, int]


class _Live(ABC):
    """What both Redis sources share: the rows, from each source's own calls."""

    archived = False
    store: Reads

    def __init__(self, names: NameCache, ref: PeriodRef, codec: Codec, start_ms: int) -> None:
        self.names = names
        self.ref = ref
        self.codec = codec
        self.start_ms = start_ms

    # each source's calls

    @abstractmethod
    async def _top(self, offset: int, count: int) -> tuple[Rows, int]: ...

    @abstractmethod
    async def _entry(self, player_id: str) -> tuple[Held | None, int]: ...

    @abstractmethod
    async def _around(self, player_id: str, span: int) -> tuple[int, int, Rows] | None:
        """(0-based rank of the first row, total, rows); None: no entry."""

    @abstractmethod
    async def _group(
        self, player_ids: Sequence[str]
    ) -> tuple[list[Held | None], list[str | None]]: ...

    @abstractmethod
    async def _own(self, player_id: str) -> tuple[Own, int]: ...

    # the reads

    def _row(
        self,
        player_id: str,
        composite: int,
        achieved_ms: int,
        rank: int,
        names: dict[str, str | None],
    ) -> Row:
        score, offset = self.codec.unpack(composite)
        return Row(
            rank,
            player_id,
            score,
            achieved_ms or self.start_ms + offset,
            names.get(player_id),
            (player_id, composite, achieved_ms),
        )

    async def _rows(self, found: Rows, first: int) -> list[Row]:
        """Rows of a range read from 0-based rank ``first``, named."""
        names = await self.names.lookup(pid for pid, _, _ in found)
        return [self._row(pid, c, at, first + i + 1, names) for i, (pid, c, at) in enumerate(found)]

    async def top(self, offset: int, count: int) -> tuple[list[Row], int]:
        found, total = await self._top(offset, count)
        return await self._rows(found, offset), total

    async def after(self, position: tuple[str, int, int], count: int) -> tuple[list[Row], int]:
        """Up to ``count`` rows of the entries that sort after ``position`` now (a cursor's
        page: rankd/cursors.py), and the total."""
        first0, total, found = await self.store.after(self.ref, position, count)
        return await self._rows(found, first0), total

    async def entry(self, player_id: str) -> tuple[Row | None, int]:
        held, total = await self._entry(player_id)
        if held is None:
            return None, total
        composite, rank0, achieved_ms = held
        names = await self.names.lookup([player_id])
        return self._row(player_id, composite, achieved_ms, rank0 + 1, names), total

    async def around(self, player_id: str, span: int) -> tuple[list[Row], int] | None:
        found = await self._around(player_id, span)
        if found is None:
            return None
        first0, total, rows = found
        return await self._rows(rows, first0), total

    async def group(self, player_ids: Sequence[str]) -> list[Row]:
        standings, raw_names = await self._group(player_ids)
        return self.grouped(player_ids, standings, raw_names)

    def grouped(
        self,
        player_ids: Sequence[str],
        standings: Sequence[Held | None],
        raw_names: list[str | None],
    ) -> list[Row]:
        """A group read's rows, best first, from what the store read (here, or with a
        league's cohort in the same call: services/leagues.py)."""
        names = self.names.absorb(list(player_ids), raw_names)
        rows = [
            self._row(pid, held[0], held[2], held[1] + 1, names)
            for pid, held in zip(player_ids, standings, strict=True)
            if held is not None
        ]
        rows.sort(key=lambda row: row.rank)
        return rows

    async def metadata(self, entries: Sequence[tuple[str, int]]) -> list[bytes | None]:
        return await self.store.metadata(self.ref, entries)

    async def own_view(self, viewer: str) -> OwnView | None:
        own, total = await self._own(viewer)
        if own is None or own[0] == "public":
            return None
        side, composite, rank, achieved_ms = own
        public_index = NOWHERE
        if side == "pending":  # a held run better than the public entry it may also have
            held, _ = await self._entry(viewer)
            if held is not None:
                public_index = held[1]
        names = await self.names.lookup([viewer])
        return OwnView(self._row(viewer, composite, achieved_ms, rank, names), public_index, total)


class KeyStandings(_Live):
    """A period of an unsharded board: one sorted set (the Redis store's reads)."""

    def __init__(
        self, store: Reads, names: NameCache, ref: PeriodRef, codec: Codec, start_ms: int
    ) -> None:
        super().__init__(names, ref, codec, start_ms)
        self.store = store

    async def _top(self, offset: int, count: int) -> tuple[Rows, int]:
        return await self.store.top(self.ref, offset, count)

    async def _entry(self, player_id: str) -> tuple[Held | None, int]:
        return await self.store.entry(self.ref, player_id)

    async def _around(self, player_id: str, span: int) -> tuple[int, int, Rows] | None:
        return await self.store.around(self.ref, player_id, span)

    async def _group(self, player_ids: Sequence[str]) -> tuple[list[Held | None], list[str | None]]:
        return await self.store.group(self.ref, player_ids)

    async def _own(self, player_id: str) -> tuple[Own, int]:
        return await self.store.own(self.ref, player_id)

    async def count_from(self, floor: int) -> tuple[int, int]:
        return await self.store.count_from(self.ref, floor)

    async def total(self) -> int:
        [total] = await self.store.public_totals([self.ref])
        return total


class ShardedStandings(_Live):
    """A sharded board's period: ``shards`` sorted sets, merged (stores/redis/sharded.py)."""

    def __init__(
        self,
        store: Reads,
        names: NameCache,
        ref: PeriodRef,
        codec: Codec,
        start_ms: int,
        shards: int,
    ) -> None:
        super().__init__(names, ref, codec, start_ms)
        self.store = store
        self.reads = store.sharded
        self.shards = shards

    async def _top(self, offset: int, count: int) -> tuple[Rows, int]:
        return await self.reads.top(self.ref, self.shards, offset, count)

    async def _entry(self, player_id: str) -> tuple[Held | None, int]:
        return await self.reads.entry(self.ref, self.shards, player_id)

    async def _around(self, player_id: str, span: int) -> tuple[int, int, Rows] | None:
        return await self.reads.around(self.ref, self.shards, player_id, span)

    async def _group(self, player_ids: Sequence[str]) -> tuple[list[Held | None], list[str | None]]:
        return await self.reads.group(self.ref, self.shards, player_ids)

    async def _own(self, player_id: str) -> tuple[Own, int]:
        return await self.reads.own(self.ref, self.shards, player_id)

    async def count_from(self, floor: int) -> tuple[int, int]:
        return await self.reads.count_from(self.ref, self.shards, floor)

    async def total(self) -> int:
        return await self.reads.total(self.ref, self.shards)

    async def approx_entry(
        self, player_id: str, histograms: Histograms
    ) -> tuple[Row, int, int] | None:
        """``accuracy=approx``: the player's row at an estimated rank, the estimated total
        and the error bound, from the player's own shard (one script call) and the other
        shards' histograms (services/approx.py); None: no entry on their shard."""
        shard, held, shard_total = await self.store.shard_entry(self.ref, player_id)
        if held is None:
            return None
        composite, rank0, achieved_ms = held
        ahead, bound, others = await histograms.estimate(self.ref, self.shards, shard, composite)
        rank = rank0 + ahead + 1
        total = max(shard_total + others, rank)
        names = await self.names.lookup([player_id])
        return self._row(player_id, composite, achieved_ms, rank, names), total, bound


def live(
    store: Reads, names: NameCache, ref: PeriodRef, codec: Codec, start_ms: int, shards: int
) -> KeyStandings | ShardedStandings:
    """A period's standings in Redis: its shards on a sharded board, else its one key."""
    if shards > 1:
        return ShardedStandings(store, names, ref, codec, start_ms, shards)
    return KeyStandings(store, names, ref, codec, start_ms)
