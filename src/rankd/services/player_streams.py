"""A player's own event stream (GET /v1/players/{player_id}/events, v1.3).

A stream follows one player on a few boards: a ``standing`` event when the player's rank
changes in a board window's current period (global standings), and a ``passed`` event when
one of the friends it names overtakes the player there.

How it scales: streams are grouped per board. One watch per board (a task, alive while a
stream follows the board) wakes on the same change notices the board streams use
(services/live.py), at most once a second, and reads the ranks of every player its streams
follow and of their friends in one group read per window (chunks of GROUP_CHUNK ids):
10,000 streams on a board cost about ten reads a second per window, not 10,000
(bench/player_events.py measures it). A banned
player's stream reads their own view (they are told of their rank as if nobody had banned
them; nobody else learns of it). Each stream compares the ranks with the last ones it saw
and queues its events.

Bounds: at most ``max_streams`` streams per process (past that, 503); each follows at most
MAX_BOARDS boards and MAX_FRIENDS friends and remembers one rank per (board, window) and
per friend; its queue holds at most QUEUE_EVENTS events, and a stream whose client does not
keep up is closed (the client reconnects and gets the state again), never buffered for.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankd import metrics
from rankd.aio import stop_tasks
from rankd.boards import BoardConfig
from rankd.errors import RankdError, TooManyStreams, Unavailable
from rankd.services.scope import Scope, resolve_scope

logger = logging.getLogger("rankd.live")

MIN_INTERVAL_S = 1.0  # the contract's "at most one a second per board and window"
MAX_BOARDS = 20
MAX_FRIENDS = 100
QUEUE_EVENTS = 64
GROUP_CHUNK = 1000
RETRY_S = 1.0
# (board, window) -> (period, rank or None)
Standing = tuple[str, int | None]


@dataclass(eq=False)
class PlayerStream:
    """One connected client following ``player_id`` on ``boards``."""

    player_id: str
    boards: tuple[str, ...]
    friends: tuple[str, ...]
    queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = field(
        default_factory=lambda: asyncio.Queue(QUEUE_EVENTS)
    )
    # what the stream last saw, per (board, window): the period and the player's rank
    seen: dict[tuple[str, str], Standing] = field(default_factory=dict)
    # per (board, window, friend): the friend's rank when the stream last looked
    friend_ranks: dict[tuple[str, str, str], int | None] = field(default_factory=dict)
    closed: bool = False

    def push(self, kind: str, data: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.queue.put_nowait((kind, data))
        except asyncio.QueueFull:
            # the client is not reading: close rather than buffer (it reconnects and is
            # sent its state again)
            metrics.LIVE_DROPPED.inc()
            self.close()

    def close(self) -> None:
        """End the stream: its reader gets None after what is queued (the oldest event
        gives way to it when the queue is full)."""
        if self.closed:
            return
        self.closed = True
        if self.queue.full():
            self.queue.get_nowait()
        self.queue.put_nowait(None)

    def update(self, board_id: str, window: str, period: str, ranks: dict[str, int]) -> None:
        """Compare one board window's ranks with what the stream last saw; queue events."""
        mine = ranks.get(self.player_id)
        key = (board_id, window)
        before = self.seen.get(key)
        first = before is None or before[0] != period  # on connect, or a new period
        previous = None if first or before is None else before[1]
        self.seen[key] = (period, mine)
        if mine is not None and (first or mine != previous):
            self.push(
                "standing",
                {
                    "board_id": board_id,
                    "window": window,
                    "period": period,
                    "rank": mine,
                    "previous_rank": previous,
                },
            )
        for friend in self.friends:
            theirs = ranks.get(friend)
            fkey = (board_id, window, friend)
            was = self.friend_ranks.get(fkey)
            self.friend_ranks[fkey] = theirs
            if first or mine is None or theirs is None or theirs > mine:
                continue
            # ahead now; behind (or absent) at the last look, while the player was ranked
            if previous is not None and (was is None or was > previous):
                self.push(
                    "passed",
                    {
                        "board_id": board_id,
                        "window": window,
                        "period": period,
                        "player_id": friend,
                        "rank": theirs,
                        "your_rank": mine,
                    },
                )


# The ranks of ``player_ids`` in a scope's public standings, and one player's own view rank
RanksOf = Callable[[Scope, Sequence[str]], Awaitable[dict[str, int]]]
OwnRank = Callable[[Scope, str], Awaitable[int | None]]


@dataclass(eq=False)
class BoardWatch:
    """The streams following one board, and the task that reads for them."""

    board_id: str
    streams: set[PlayerStream] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class PlayerHub:
    """The process's player streams, grouped per board."""

    def __init__(
        self,
        board: Callable[[str], Awaitable[BoardConfig]],
        ranks_of: RanksOf,
        own_rank: OwnRank,
        banned: Callable[[str], bool],
        max_streams: int,
    ) -> None:
        self.board = board
        self.ranks_of = ranks_of
        self.own_rank = own_rank
        self.banned = banned
        self.max_streams = max_streams
        self.watches: dict[str, BoardWatch] = {}
        self.streams: set[PlayerStream] = set()

    @property
    def count(self) -> int:
        return len(self.streams)

    def open(self, player_id: str, boards: Sequence[str], friends: Sequence[str]) -> PlayerStream:
        if self.count >= self.max_streams:
            raise TooManyStreams(
                f"this instance serves its maximum of {self.max_streams} player streams; "
                "retry shortly"
            )
        stream = PlayerStream(player_id, tuple(boards), tuple(friends))
        self.streams.add(stream)
        metrics.PLAYER_STREAMS.set(self.count)
        for board_id in stream.boards:
            watch = self.watches.get(board_id)
            if watch is None:
                watch = self.watches[board_id] = BoardWatch(board_id)
            watch.streams.add(stream)
            if watch.task is None or watch.task.done():
                watch.task = asyncio.create_task(self._watch(watch), name=f"player-{board_id}")
            watch.wake.set()  # the new stream's state at once
        return stream

    def close(self, stream: PlayerStream) -> None:
        self.streams.discard(stream)
        metrics.PLAYER_STREAMS.set(self.count)
        stream.close()
        for board_id in stream.boards:
            watch = self.watches.get(board_id)
            if watch is None:
                continue
            watch.streams.discard(stream)
            if not watch.streams:
                del self.watches[board_id]
                watch.wake.set()  # its task sees it has nobody to read for, and ends

    def notify(self, board_id: str | None) -> None:
        """A change notice on ``board_id`` (None: every board, after a moderation change
        or a reconnect); services/live.py's listener hands each one here."""
        if board_id is None:
            for each in self.watches.values():
                each.wake.set()
        elif (watch := self.watches.get(board_id)) is not None:
            watch.wake.set()

    async def close_all(self) -> None:
        tasks = [w.task for w in self.watches.values() if w.task is not None]
        for watch in list(self.watches.values()):
            for stream in list(watch.streams):
                stream.close()
        await stop_tasks(tasks, 1.0)

    async def _watch(self, watch: BoardWatch) -> None:
        last = -MIN_INTERVAL_S
        while self.watches.get(watch.board_id) is watch:
            await watch.wake.wait()
            pause = last + MIN_INTERVAL_S - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)  # notices meanwhile fold into this one pass
            watch.wake.clear()
            last = time.monotonic()
            if self.watches.get(watch.board_id) is not watch:
                return
            try:
                await self._pass(watch)
            except Unavailable as exc:
                logger.info("player streams of %s: %s; again shortly", watch.board_id, exc)
                await asyncio.sleep(RETRY_S)
                watch.wake.set()
            except RankdError as exc:
                # the board went, or its config no longer allows the read: the streams end
                # (a client that reconnects is told why before any stream starts)
                logger.info("player streams of %s end: %s", watch.board_id, exc)
                for stream in list(watch.streams):
                    stream.close()
                return

    async def _pass(self, watch: BoardWatch) -> None:
        board = await self.board(watch.board_id)
        streams = list(watch.streams)
        followed = {s.player_id for s in streams}
        wanted = list(dict.fromkeys([*followed, *(f for s in streams for f in s.friends)]))
        for window in board.windows:
            scope = resolve_scope(board, window, None)
            ranks: dict[str, int] = {}
            for i in range(0, len(wanted), GROUP_CHUNK):
                ranks.update(await self.ranks_of(scope, wanted[i : i + GROUP_CHUNK]))
            own: dict[str, int | None] = {}
            for player in followed:
                if self.banned(player):  # their own view: where they would stand
                    own[player] = await self.own_rank(scope, player)
            for stream in streams:
                view = ranks
                if stream.player_id in own:
                    view = dict(ranks)
                    mine = own[stream.player_id]
                    if mine is not None:
                        view[stream.player_id] = mine
                        # in their own view, those at or below them stand one lower
                        view = {
                            p: (r + 1 if p != stream.player_id and r >= mine else r)
                            for p, r in view.items()
                        }
                stream.update(board.board_id, window, scope.period.id, view)
