"""Live updates: change notices from Redis, fanned out to the connected event streams.

The submit path ends its Redis pipeline with one notice naming the standings it touched
(stores/redis/notices.py, ``change_notice``). One listener per process receives the notices
and marks the streams watching those standings dirty (through the one Feed they share, so a
notice costs the same however many streams watch). A stream holds nothing but that flag
(a queue of size one: notices never pile up behind a slow stream), re-reads its top list
through the public read path (services/reads.py: what the public may not see, a stream
does not show) at most ten times a second, and sends it only when it changed. A notice
that arrives while a stream reads sets the flag again, so a stream always ends on the
latest state.

Bounds: at most ``max_streams`` streams per process (past that, 503); each holds one flag
and its last sent list; feeds exist only while a stream watches them, and a feed's reads in
flight are at most one per distinct (period, n) its streams ask for. What a slow client has
not read yet is bounded by the HTTP layer (api/routes_live.py drops it when a send does not
complete in time).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import orjson

from rankd import metrics
from rankd.aio import keep_task, stop_tasks
from rankd.errors import RateLimited, TooManyStreams, Unavailable
from rankd.results import Top
from rankd.stores.redis.notices import Notices

logger = logging.getLogger("rankd.live")

# The contract's "at most 10 per second per stream".
MIN_INTERVAL_S = 0.1
MAX_ANNOUNCING = 8  # moderation announcements in flight (see LiveHub.announce)
# Which standings a stream watches. The period is left out: a stream that follows the
# current period moves on by itself, and a notice about another period of the same window
# (a late run) only costs one read that finds nothing new.
Topic = tuple[str, str, str]  # board, window, segment ("" for global)
_CLOSED = -2
STREAM_RETRY_AFTER_S = 5  # an address at its stream cap: streams last, so not at once
T = TypeVar("T")


@dataclass(eq=False)
class Feed:
    """The streams of one topic share this: a change count and a wake-up. A notice costs
    the same however many streams watch (each wakes at most once per read it makes)."""

    generation: int = 0
    noticed_at: float = field(default_factory=time.monotonic)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    streams: int = 0
    # reads in flight, by what they read and the generation they started at: the streams
    # woken by one notice make one read between them, not one each
    reads: dict[Hashable, asyncio.Future[Any]] = field(default_factory=dict)

    async def shared(self, key: Hashable, read: Callable[[], Awaitable[T]]) -> T:
        flight = self.reads.get(key)
        if flight is None:
            flight = asyncio.ensure_future(read())
            self.reads[key] = flight

            def done(finished: asyncio.Future[Any]) -> None:
                self.reads.pop(key, None)
                if not finished.cancelled():
                    finished.exception()  # retrieved: every reader may have gone

            flight.add_done_callback(done)
        # one reader hanging up must not cancel the others' read
        return cast(T, await asyncio.shield(flight))

    def notice(self) -> None:
        self.generation += 1
        self.noticed_at = time.monotonic()
        # the waiters of this round wake; later waits take the next event
        woken, self.wake = self.wake, asyncio.Event()
        woken.set()


@dataclass(eq=False)
class Stream:
    """One connected client. Its whole queue is one flag: whether its feed has changed
    since it last read (``dirty``); notices arriving meanwhile fold into it."""

    topic: Topic
    feed: Feed
    reads: Hashable = ()  # what the stream reads besides its topic (e.g. period, n)
    address: str = ""  # the client's, counted against RANKD_LIVE_MAX_STREAMS_PER_ADDRESS
    seen: int = -1  # the feed's generation at this stream's last read (-1: never read)
    opened_at: float = field(default_factory=time.monotonic)

    @property
    def dirty(self) -> bool:
        return self.seen != self.feed.generation

    def read_now(self) -> tuple[int, float]:
        """Take the flag; returns the generation read at, and how old a cached list may be
        and still show every change noticed so far."""
        self.seen = self.feed.generation
        return self.seen, time.monotonic() - max(self.feed.noticed_at, self.opened_at)

    async def changed(self, timeout_s: float | None) -> None:
        """Until the feed changes after this stream's last read (or ``timeout_s`` passes)."""
        if self.dirty:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.feed.wake.wait(), timeout_s)


# A stream's read: the top list now (given how old a cached list may be, or None for any),
# and in how many seconds it may change without a notice (its period ends), or None.
Read = Callable[[float | None], Awaitable[tuple[Top, float | None]]]


class LiveHub:
    """The process's streams, by topic, and the one listener that wakes them."""

    def __init__(
        self,
        store: Notices,
        max_streams: int,
        retry_s: float = 1.0,
        *,
        max_per_address: int = 0,
    ) -> None:
        self.store = store
        self.max_streams = max_streams
        self.max_per_address = max_per_address  # 0: no cap
        self.retry_s = retry_s
        # streams open per client address; an address leaves when its last stream closes,
        # so this holds at most max_streams entries
        self._per_address: Counter[str] = Counter()
        self._feeds: dict[Topic, Feed] = {}
        # started with the first stream: a process nobody watches holds no subscription
        self._listener: asyncio.Task[None] | None = None
        self._count = 0
        self._announcing: set[asyncio.Task[None]] = set()
        # told of every notice too: the board (None: all of them), e.g. the player streams
        self.followers: list[Callable[[str | None], None]] = []

    def listening(self) -> None:
        """Make sure the one listener runs (started with the first stream of any kind)."""
        if self._listener is None or self._listener.done():
            self._listener = asyncio.create_task(self.listen(), name="live-notices")

    @property
    def count(self) -> int:
        return self._count

    def open_stream(
        self,
        board_id: str,
        window: str,
        segment: str,
        reads: Hashable = (),
        *,
        address: str = "",
    ) -> Stream:
        held = self._per_address[address]
        if self.max_per_address and held >= self.max_per_address:
            metrics.LIVE_REFUSED_ADDRESS.inc()
            raise RateLimited(
                f"this address already holds {held} live streams (the most one address may "
                "hold); close one, or read /top",
                retry_after_s=STREAM_RETRY_AFTER_S,
            )
        if self._count >= self.max_streams:
            raise TooManyStreams(
                f"this instance serves its maximum of {self.max_streams} live streams; "
                "retry shortly or read /top"
            )
        self._per_address[address] = held + 1
        self.listening()
        topic = (board_id, window, segment)
        feed = self._feeds.setdefault(topic, Feed())
        feed.streams += 1
        self._count += 1
        metrics.LIVE_STREAMS.set(self._count)
        return Stream(topic, feed, reads, address)

    def close_stream(self, stream: Stream) -> None:
        feed = self._feeds.get(stream.topic)
        if feed is not stream.feed or stream.seen == _CLOSED:
            return
        stream.seen = _CLOSED
        feed.streams -= 1
        if feed.streams == 0:
            del self._feeds[stream.topic]
        self._count -= 1
        metrics.LIVE_STREAMS.set(self._count)
        held = self._per_address[stream.address] - 1
        if held > 0:
            self._per_address[stream.address] = held
        else:
            del self._per_address[stream.address]

    def notify(self, board_id: str, touched: list[tuple[str, str, str]] | None) -> None:
        metrics.LIVE_NOTICES.inc()
        if touched is None:  # a moderation change: every stream reads again
            self._notice_all()
            return
        for follower in self.followers:
            follower(board_id)
        for window, _period, segment in touched:
            feed = self._feeds.get((board_id, window, segment))
            if feed is not None:
                feed.notice()

    def announce(self) -> None:
        """After a ban, an unban, a hold decision, an erasure or a board deletion (which
        move entries without a submit's notice): every instance's streams read again, so
        none keeps showing what the boards no longer hold. At most MAX_ANNOUNCING sends
        in flight; past that one is dropped (one in flight already makes every stream
        read again)."""
        if len(self._announcing) >= MAX_ANNOUNCING:
            return

        async def send() -> None:
            try:
                await self.store.announce_everything()
            except Exception as exc:  # streams resubscribe and re-read once Redis is back
                logger.warning("live notices: a moderation change not announced: %r", exc)

        keep_task(self._announcing, send(), name="live-announce")

    def _notice_all(self) -> None:
        for feed in self._feeds.values():
            feed.notice()
        for follower in self.followers:
            follower(None)

    async def close(self) -> None:
        await stop_tasks(list(self._announcing), 1.0)
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)

    async def listen(self) -> None:
        """Receive notices until cancelled; reconnect after Redis comes back (every stream
        re-reads then: notices sent meanwhile were lost)."""
        while True:
            try:
                notices = self.store.changes(on_subscribed=self._notice_all)
                async with contextlib.aclosing(notices):
                    async for board_id, touched in notices:
                        self.notify(board_id, touched)
            except Unavailable as exc:
                logger.warning("live notices: %r; again in %.1f s", exc.__cause__, self.retry_s)
            await asyncio.sleep(self.retry_s)


async def top_events(stream: Stream, read: Read, retry_s: float = 1.0) -> AsyncIterator[bytes]:
    """The JSON of each new top list for ``stream``, the first at once.

    A read that fails with Unavailable is retried after ``retry_s`` (or a notice); any other
    error (the board's config no longer has the window) ends the stream with it raised.
    """
    last: bytes | None = None
    last_read = -MIN_INTERVAL_S
    wait_s: float | None = None
    while True:
        await stream.changed(wait_s)
        pause = last_read + MIN_INTERVAL_S - time.monotonic()
        if pause > 0:
            await asyncio.sleep(pause)  # notices meanwhile fold into this one read
        generation, max_age_s = stream.read_now()
        last_read = time.monotonic()
        try:
            top, wait_s = await stream.feed.shared(
                (stream.reads, generation), functools.partial(read, max_age_s)
            )
        except Unavailable:
            wait_s = retry_s
            continue
        if wait_s is not None:
            wait_s = max(wait_s, MIN_INTERVAL_S)
        body = orjson.dumps(top)
        if body != last:
            last = body
            metrics.LIVE_EVENTS.inc()
            yield body
