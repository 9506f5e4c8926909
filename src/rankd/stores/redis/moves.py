"""Moderation's moves: entries between a period's sides (public, :shadow, :pending), holds
settled, and a player's entries and marks dropped (an erasure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankd import codec
from rankd.boards import BoardConfig
from rankd.periods import PeriodRef
from rankd.stores.redis import keys
from rankd.stores.redis.common import Shards, number, side_keys, sum_args
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.scripts import ENTRY, MOVE_ENTRIES, SET_ENTRY, SUBMIT_BEST, Call, Command


class Moves:
    """Entries moved between sides, holds settled, players' entries dropped."""

    def __init__(self, conn: RedisConn, shards: Shards) -> None:
        self.conn = conn
        self.shards = shards

    async def standing_checks(
        self, checks: Sequence[tuple[PeriodRef, str, int]]
    ) -> list[tuple[int, int | None]]:
        """For (period, player, composite): how many public entries are strictly above the
        composite, and the player's public composite (None: no entry). One round trip."""
        calls: list[Call] = []
        counts: list[Command] = []
        spans: list[int] = []
        for ref, player_id, composite in checks:
            calls.append((ENTRY, (self.shards.own(ref, player_id).public,), (player_id,)))
            every = self.shards.every(ref)
            spans.append(len(every))
            counts += [("ZCOUNT", (pk.public, f"({composite}", "+inf")) for pk in every]
        with reachable():
            raw = await self.conn.run(calls, counts)
        entries, counted = raw[: len(checks)], iter(raw[len(checks) :])
        above = [sum(int(next(counted)) for _ in range(n)) for n in spans]
        return [
            (n, None if len(e) == 1 else number(e[1])) for n, e in zip(above, entries, strict=True)
        ]

    async def settle_holds(
        self,
        board: BoardConfig,
        decided: Sequence[tuple[PeriodRef, Any, bool, str, Sequence[tuple[int, int]]]],
    ) -> None:
        """After holds were approved or rejected: (period, the hold, approved, the side it
        is published to, the player's holds still waiting there as (composite, ms)). An
        approved run is raised into its side like a submit; the :pending entry becomes the
        best of the holds still waiting, or goes."""
        calls: list[Call] = []
        for (ref, hold, approved, side, waiting), layout in (
            (d, layout) for d in decided for layout in self.shards.written(board.board_id)
        ):
            player = hold.player_id
            pk = keys.own_keys(*ref, player, layout)
            if approved:
                calls.append(
                    (
                        SUBMIT_BEST,
                        (*side_keys(pk, side), pk.applied),
                        (hold.composite, player, hold.ended_ms, "", 0, 0, hold.metadata or ""),
                    )
                )
            # the :pending entry becomes the best hold still waiting (a higher composite, or
            # an equal one reached earlier), or goes
            best = min(waiting, key=lambda w: (-w[0], codec.stamp_offset(w[1])), default=None)
            calls.append(
                (
                    SET_ENTRY,
                    (pk.pending, pk.public),
                    (player, "", 0) if best is None else (player, *best),
                )
            )
        with reachable():
            await self.conn.run(calls)

    async def move_entries(
        self,
        board: BoardConfig,
        moves: Sequence[tuple[PeriodRef, str, str, Sequence[str]]],
        *,
        replace: bool = False,
    ) -> int:
        """Move players' entries between sides of board periods, one pipeline for all:
        (period, from side, to side, player ids). The better entry stays (a sum board's
        totals add up), or with ``replace`` the moved one. Repeating a move moves nothing."""
        calls: list[Call] = []
        for ref, source, dest, players in moves:
            if not players:
                continue
            mode, extra = "best", ("", "", "")  # type: tuple[str, tuple[int | str, ...]]
            if replace:
                mode = "replace"
            elif board.policy_of(ref.window) == "latest":
                mode = "latest"
            elif board.policy_of(ref.window) == "sum":
                mode, extra = "sum", sum_args(board, ref.window)
            by_shard: dict[int, list[str]] = {}
            for player in players:  # each player's entries are on their own shard
                for layout in self.shards.written(board.board_id):  # both, in a move
                    by_shard.setdefault(keys.shard_name(player, layout), []).append(player)
            for shard, on_shard in by_shard.items():
                pk = keys.period_keys(*ref, shard)
                calls.append(
                    (
                        MOVE_ENTRIES,
                        (pk.side(dest), pk.side(source), pk.public),
                        (mode, *extra, *on_shard),
                    )
                )
        if not calls:
            return 0
        with reachable():
            moved = await self.conn.run(calls)
        return sum(int(m) for m in moved)

    async def drop_entries(self, refs: Sequence[PeriodRef], player_ids: Sequence[str]) -> int:
        """Remove the players' entries from each period, every side (public, :shadow,
        :pending) with their exact times, and their runs' marks ("<player>|<run_id>": a sum
        board's counted runs, the submit path's applied marks). Every removal of a player's
        entry from a key goes through move_entries.lua's "drop". Repeatable."""
        if not refs or not player_ids:
            return 0
        calls: list[Call] = []
        # each player's keys of each period: their shard's on a sharded board
        targets: list[tuple[keys.PeriodKeys, list[str]]] = []
        for ref in refs:
            by_shard: dict[int, list[str]] = {}
            for player in player_ids:
                for layout in self.shards.written(ref.board):  # both, in a move
                    by_shard.setdefault(keys.shard_name(player, layout), []).append(player)
            targets += [(keys.period_keys(*ref, k), mine) for k, mine in by_shard.items()]
        for pk, mine in targets:
            for side in ("public", "shadow", "pending"):
                key = pk.side(side)
                calls.append((MOVE_ENTRIES, (key, key, pk.public), ("drop", "", "", "", *mine)))
        with reachable():
            counts = [int(n) for n in await self.conn.run(calls)]
            # marks are written with an entry, so only periods that held one can hold them
            for i, (pk, mine) in enumerate(targets):
                if sum(counts[3 * i : 3 * i + 3]):
                    for key in (pk.runs, pk.applied):
                        await self._drop_marks(key, mine)
                # metadata and run ids of entries no side holds any more (a rejected hold's)
                for key in (pk.meta, pk.rid):
                    await self._drop_fields(key, mine)
        return sum(counts)

    async def _drop_fields(self, key: str, player_ids: Sequence[str]) -> None:
        """HDEL the fields "<stamp><player>" (codec.member) of a member-keyed hash (HSCAN in
        steps; nothing to scan where the hash does not exist)."""
        stamp = "?" * codec.STAMP_WIDTH  # ids hold no glob characters (formats.py)
        for player in player_ids:
            found = [f async for f, _ in self.conn.client.hscan_iter(key, match=stamp + player)]
            for i in range(0, len(found), 500):
                await self.conn.client.hdel(key, *found[i : i + 500])

    async def _drop_marks(self, key: str, player_ids: Sequence[str]) -> None:
        """ZREM the members "<player>|..." of ``key`` (ZSCAN in steps; a few per player)."""
        for player in player_ids:
            found = [
                m async for m, _ in self.conn.client.zscan_iter(key, match=f"{player}|*", count=500)
            ]
            for i in range(0, len(found), 500):
                await self.conn.client.zrem(key, *found[i : i + 500])
