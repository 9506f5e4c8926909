"""Redis's side of a day leaving the rolling-7d window (services/rolling.py): what the
staged rebuild does not clear, cleared for the entries that left. The rebuild swaps in a
new public board and writes its entries' times; the entries that left may also sit on the
:shadow and :pending sides (a banned player's, a held run's), keep their metadata and
their run ids under their members, and a player left with no entry keeps their time."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rankd import codec
from rankd.periods import PeriodRef
from rankd.stores.redis import keys
from rankd.stores.redis.common import Shards
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.scripts import MOVE_ENTRIES, Call

CHUNK = 1_000  # players a script call or an HDEL


class RollingKeys:
    def __init__(self, conn: RedisConn, shards: Shards) -> None:
        self.conn = conn
        self.shards = shards

    @staticmethod
    def _by_key(
        ref: PeriodRef, players: Iterable[tuple[str, int]], shards: int
    ) -> dict[keys.PeriodKeys, list[tuple[str, int]]]:
        """The players (with an exact time) grouped by the keys of their shard of ``ref``."""
        found: dict[keys.PeriodKeys, list[tuple[str, int]]] = {}
        for player, ms in players:
            pk = keys.own_keys(*ref, player, shards)
            found.setdefault(pk, []).append((player, ms))
        return found

    async def forget_departed(
        self, ref: PeriodRef, gone: Sequence[tuple[str, int]], shards: int
    ) -> None:
        """Entries that left (player, exact ms of the entry): off the :shadow and :pending
        sides, with their times, and their members' metadata and run ids dropped, in the
        layout ``shards``."""
        for pk, players in self._by_key(ref, gone, shards).items():
            ids = [p for p, _ in players]
            members = [codec.member(p, ms) for p, ms in players]
            calls: list[Call] = [
                (MOVE_ENTRIES, (side, side, pk.public), ("drop", "", "", "", *ids[i : i + CHUNK]))
                for side in (pk.shadow, pk.pending)
                for i in range(0, len(ids), CHUNK)
            ]
            with reachable():
                await self.conn.run(calls)
                for key in (pk.meta, pk.rid):
                    for i in range(0, len(members), CHUNK):
                        await self.conn.client.hdel(key, *members[i : i + CHUNK])

    async def forget_times(self, ref: PeriodRef, players: Sequence[str], shards: int) -> None:
        """The public side's exact times of players left with no entry (after the swap), in
        the layout ``shards``."""
        for pk, held in self._by_key(ref, ((p, 0) for p in players), shards).items():
            by_hash: dict[str, list[str]] = {}
            for player, _ in held:
                by_hash.setdefault(keys.times(pk.public, player), []).append(player)
            pipe = self.conn.client.pipeline(transaction=False)
            for key, fields in by_hash.items():
                pipe.hdel(key, *fields)
            with reachable():
                await pipe.execute()
