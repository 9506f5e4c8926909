"""What admits a submit's runs: each board's run-id registry (run_ids.lua) and its known
segment values (segment_values.lua), with the restores and removals that keep them whole."""

from __future__ import annotations

from collections.abc import Sequence

from rankd.runs import Segments
from rankd.stores.redis import keys
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.scripts import RUN_IDS, SEGMENT_VALUES


class Admission:
    """The run-id registries and the segment values."""

    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn

    async def claim_run_ids(
        self,
        board_id: str,
        buckets: Sequence[int],
        expire_at_s: int,
        runs: Sequence[tuple[str, str, int, int, bool]],
    ) -> list[int] | None:
        """Check and claim (run_id, player, score, ended ms, ended given) of each run in
        the board's run-id registry (run_ids.lua): per run, -1 for a conflict, else the
        ended ms it is logged with. ``buckets``: the current one first, where claims go.
        None when the registry is not armed on this Redis (nothing was claimed)."""
        args: list[str | int] = [expire_at_s]
        for run_id, player_id, score, ended_ms, given in runs:
            args += [run_id, player_id, str(score), str(ended_ms), "1" if given else "0"]
        call_keys = [keys.run_ids_armed(board_id), *(keys.run_ids(board_id, b) for b in buckets)]
        with reachable():
            # shares a pipeline with concurrent requests' calls; a resent claim (NOSCRIPT
            # retry) finds its own fingerprint and answers alike
            reply = await self.conn.call((RUN_IDS, call_keys, args))
        if not isinstance(reply, list):
            return None
        return [int(x) for x in reply]

    async def restore_run_ids(
        self, board_id: str, buckets: dict[int, tuple[int, dict[str, str]]]
    ) -> None:
        """Put remembered runs back in the board's registry, then arm it: per bucket, its
        expiry (unix s) and run_id -> fingerprint. A run already there keeps its own
        (HSETNX): a claim made meanwhile by another instance's restore wins nothing new."""
        with reachable():
            for bucket, (expire_at_s, entries) in buckets.items():
                key = keys.run_ids(board_id, bucket)
                items = list(entries.items())
                for i in range(0, len(items), 1000):
                    pipe = self.conn.client.pipeline(transaction=False)
                    for run_id, fingerprint in items[i : i + 1000]:
                        pipe.hsetnx(key, run_id, fingerprint)
                    pipe.expireat(key, expire_at_s)
                    await pipe.execute()
            await self.conn.client.set(keys.run_ids_armed(board_id), "1")

    async def disarm_run_ids(self, board_ids: Sequence[str]) -> None:
        """Remove the boards' run-id registry markers: their next submit restores the
        registry (a Redis that restarted may have lost its last claims)."""
        with reachable():
            for first in range(0, len(board_ids), 1000):  # one round trip per 1000 boards
                pipe = self.conn.client.pipeline(transaction=False)
                for board_id in board_ids[first : first + 1000]:
                    pipe.delete(keys.run_ids_armed(board_id))
                await pipe.execute()

    async def forget_run_ids(self, runs: Sequence[tuple[str, int, str]]) -> None:
        """Remove runs from their boards' run-id registries: (board, bucket, run id); the
        bucket after it too (a claim is made a moment after the run is received)."""
        if not runs:
            return
        with reachable():
            pipe = self.conn.client.pipeline(transaction=False)
            for board_id, bucket, run_id in runs:
                for b in (bucket, bucket + 1):
                    pipe.hdel(keys.run_ids(board_id, b), run_id)
            await pipe.execute()

    async def admit_segment_values(
        self, board_id: str, dimensions: Sequence[str], most: int, runs: Sequence[Segments]
    ) -> list[bool] | None:
        """Whether each run's segment values are known or fit the board's bound of ``most``
        distinct values per dimension (segment_values.lua; those that fit are added). None
        when a dimension's set is not complete on this Redis (nothing was added)."""
        index = {d: i + 1 for i, d in enumerate(dimensions)}
        args: list[str | int] = [most]
        for segments in runs:
            args.append(len(segments))
            for dimension, value in segments:
                args += [index[dimension], value]
        call_keys = [keys.segment_values(board_id, d) for d in dimensions]
        with reachable():
            reply = await self.conn.call((SEGMENT_VALUES, call_keys, args))
        if not isinstance(reply, list):
            return None
        return [bool(x) for x in reply]

    async def restore_segment_values(self, board_id: str, values: dict[str, set[str]]) -> None:
        """Put a board's known segment values back, each set with its marker."""
        with reachable():
            pipe = self.conn.client.pipeline(transaction=False)
            for dimension, found in values.items():
                pipe.sadd(keys.segment_values(board_id, dimension), "", *found)
            await pipe.execute()
