"""Applied marks and the periods index.

A submit marks in a period's :applied key each run it applied, so the log consumer skips
it (services/applier.py); each window's periods index lists the periods that ever took a
run, written once per period as this process first sees it (memoised here).
"""

from __future__ import annotations

from collections.abc import Sequence

from rankd.boards import BoardConfig
from rankd.plan import Target
from rankd.stores.redis import keys
from rankd.stores.redis.common import mark_of, text
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.scripts import Command
from rankd.ttlcache import TTLCache


class Marks:
    """The submit path's marks of the runs it applied."""

    def __init__(self, conn: RedisConn, *, keep_s: float = 15.0) -> None:
        self.conn = conn
        # how long the marks of runs the submit path applied stay (see services/applier.py)
        self.keep_ms = int(keep_s * 1000)

    async def find_marks(self, board: BoardConfig, targets: Sequence[Target]) -> list[bool]:
        """Whether the submit path marked each target as applied (one ZMSCORE per period
        key, one round trip)."""
        by_key: dict[str, list[int]] = {}
        for i, t in enumerate(targets):
            pk = keys.own_keys(
                board.board_id, t.window, t.period.id, t.segment, t.run.player_id, board.shards
            )
            by_key.setdefault(pk.applied, []).append(i)
        found = [False] * len(targets)
        if not by_key:
            return found
        # a command of at most MARKS_PER_CALL members: Redis takes 1,048,576 arguments
        asked = [
            (key, indexes[j : j + MARKS_PER_CALL])
            for key, indexes in by_key.items()
            for j in range(0, len(indexes), MARKS_PER_CALL)
        ]
        with reachable():
            pipe = self.conn.client.pipeline(transaction=False)
            for key, indexes in asked:
                runs = [targets[i].run for i in indexes]
                pipe.zmscore(key, [mark_of(r.run_id, r.player_id) for r in runs])
            replies = await pipe.execute()
        for (_, indexes), scores in zip(asked, replies, strict=True):
            for i, score in zip(indexes, scores, strict=True):
                found[i] = score is not None
        return found


MARKS_PER_CALL = 50_000


class PeriodsIndex:
    """Each window's periods that ever took a run."""

    def __init__(self, conn: RedisConn, *, memo_s: float = 60.0, memo_bytes: int = 1 << 20) -> None:
        self.conn = conn
        # Which periods this process has already put in the periods index (an entry: a
        # tuple of three short strings, about 250 bytes).
        self._memo: TTLCache[tuple[str, str, str], bool] = TTLCache(
            memo_s, memo_bytes, lambda key, _: 250
        )

    def commands(
        self, board_id: str, plans: Sequence[Sequence[Target]]
    ) -> tuple[list[Command], set[tuple[str, str, str]]]:
        """ZADD NX of newly seen periods into the per-window periods index."""
        commands: list[Command] = []
        memos: set[tuple[str, str, str]] = set()
        for targets in plans:
            for t in targets:
                if not t.sendable:
                    continue
                memo = (board_id, t.window, t.period.id)
                if memo in memos or self._memo.get(memo) is not None:
                    continue
                memos.add(memo)
                index = keys.periods_index(board_id, t.window)
                commands.append(("ZADD", (index, "NX", t.period.start_ms, t.period.id)))
        return commands, memos

    def remember(self, memo: tuple[str, str, str]) -> None:
        """A period whose index entry was written."""
        self._memo.put(memo, True)

    def forget(self) -> None:
        """After a rebuild the periods index must be written again."""
        self._memo.clear()

    async def period_ids(self, board_id: str, window: str) -> list[str]:
        """Ids of the window's periods that ever took a run (the periods index)."""
        with reachable():
            members = await self.conn.client.zrange(keys.periods_index(board_id, window), 0, -1)
        return [text(m) for m in members]

    async def has_periods(self, board_id: str, windows: Sequence[str]) -> bool:
        with reachable():
            found = await self.conn.client.exists(
                *(keys.periods_index(board_id, w) for w in windows)
            )
        return bool(found)
