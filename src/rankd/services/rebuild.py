"""Rebuild Redis boards from the PostgreSQL copy, and notice when Redis needs it.

A period is streamed out of ``player_best`` with COPY in composite order (Redis inserts
sorted input fastest), loaded with multi-member ZADDs into a temporary key beside the board
(same hash tag), then RENAMEd over it, so readers never see half a board. A ``sum`` board's
counted run ids are restored the same way.

The rebuild holds the apply lock exclusively: every consumer batch either committed before
the snapshot (so it is in it) or runs after the RENAME (so it lands on the new key). Runs
logged but not yet in PostgreSQL are therefore applied by the consumer afterwards, and
nothing acknowledged is missing.

Redis's ``run_id`` changes on every restart. The boards remember the run id they were last
verified on (the marker key); a different one means Redis restarted, maybe with an AOF that
lost its last second or with no data at all, and everything is rebuilt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd import keys, metrics
from rankd.boards import BoardConfig
from rankd.errors import BoardNotFound
from rankd.periods import ALL_TIME, parse_period
from rankd.services.registry import BoardRegistry
from rankd.services.submit import Submitter, expires_at_ms, sum_horizon_ms
from rankd.stores import standings
from rankd.stores.postgres import PostgresStore

log = logging.getLogger("rankd.rebuild")

MARKER = "rankd:verified-redis-run-id"
FLUSH_EVERY = 1  # ZADDs (one per page of 20,000 members) per pipeline round trip

Progress = Callable[[int], None]


@dataclass
class RebuildReport:
    periods: int = 0
    members: int = 0
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)

    @property
    def members_per_s(self) -> float:
        return self.members / self.seconds if self.seconds else 0.0


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%b\r\n" % (len(value), value)


class _Loader:
    """Multi-member ZADDs into one key, RESP-encoded here and sent on one connection.

    PostgreSQL formats a page of members' arguments in one aggregate (standings.pages); a
    page becomes one ZADD with a bulk byte replace, so Python does no per-member work: a
    row-at-a-time COPY, or packing through a generic client, cost more CPU than Redis spent
    executing. Replies are read one round behind, so PostgreSQL and Redis work in parallel.
    """

    def __init__(self, redis: Redis, key: str, progress: Progress | None) -> None:
        self.redis = redis
        self.key = key
        self.progress = progress
        self.head = _bulk(b"ZADD") + _bulk(key.encode())
        self.outgoing: list[bytes] = []
        self.unread = 0
        self.loaded = 0
        self.conn: Any = None

    async def __aenter__(self) -> _Loader:
        self.conn = await self.redis.connection_pool.get_connection()  # type: ignore[no-untyped-call]
        await self.conn.send_command("DEL", self.key)
        await self.conn.read_response()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                await self.flush()
        finally:
            if exc[0] is not None:
                await self.conn.disconnect()  # replies may be unread: never reuse it
            await self.redis.connection_pool.release(self.conn)

    async def add_page(self, members: int, arguments: bytes) -> None:
        """One ZADD of a page: PostgreSQL formatted the arguments (see standings.py)."""
        body = arguments.replace(b"\x01", b"\r\n")
        self.outgoing.append(b"*%d\r\n%b%b" % (2 + 2 * members, self.head, body))
        self.loaded += members
        if self.progress is not None:
            self.progress(members)
        if len(self.outgoing) >= FLUSH_EVERY:
            await self._send()

    async def flush(self) -> None:
        await self._send()
        await self._drain()

    async def _send(self) -> None:
        if not self.outgoing:
            return
        await self._drain()  # the previous round's replies: keeps one round in flight
        await self.conn.send_packed_command(self.outgoing, check_health=False)
        self.unread = len(self.outgoing)
        self.outgoing = []

    async def _drain(self) -> None:
        while self.unread:
            await self.conn.read_response()
            self.unread -= 1


class Rebuilder:
    def __init__(
        self, redis: Redis, pg: PostgresStore, boards: BoardRegistry, submitter: Submitter
    ) -> None:
        self.redis = redis
        self.pg = pg
        self.boards = boards
        self.submitter = submitter

    async def rebuild(
        self,
        board: str | None = None,
        window: str | None = None,
        period: str | None = None,
        progress: Progress | None = None,
        *,
        when: Literal["always", "redis_changed", "missing"] = "always",
    ) -> RebuildReport | None:
        """Restore the selected periods (default: all). Returns None if nothing was needed.

        ``redis_changed``: only if Redis is not the process the boards were verified on.
        ``missing``: only periods whose board key is gone.
        """
        started = time.perf_counter()
        report = RebuildReport()
        if when == "redis_changed" and await self._verified():
            return None  # the common case, decided without taking the lock
        async with self.pg.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (standings.APPLY_LOCK,))
            run_id = await self._redis_run_id()
            if when == "redis_changed" and await self._verified():
                return None  # another instance rebuilt while we waited for the lock
            now_ms = int(time.time() * 1000)
            selected = await standings.periods(conn, board, window, period)
            for board_id, win, pid, start_ms in selected:
                try:
                    config = await self.boards.get(board_id)
                except BoardNotFound:
                    report.skipped.append(f"{board_id}: no such board")
                    continue
                expires = expires_at_ms(config, parse_period(win, pid))
                if expires is not None and now_ms >= expires:
                    continue  # past its Redis retention: served from PostgreSQL
                live = keys.period_keys(board_id, win, pid).public
                if when == "missing" and await self.redis.exists(live):
                    continue
                loaded = await self._rebuild_period(
                    conn, config, (board_id, win, pid), expires, progress
                )
                await self.redis.zadd(keys.periods_index(board_id, win), {pid: start_ms}, nx=True)
                report.periods += 1
                report.members += loaded
                metrics.REBUILDS.inc()
            if board is None and window is None and period is None:
                if when != "missing" or not await self.redis.exists(keys.NAMES):
                    await self._restore_names(conn)
                if when != "missing":
                    await self.redis.set(MARKER, run_id)
        self.submitter.forget_indexed()
        report.seconds = time.perf_counter() - started
        log.info(
            "rebuilt %d periods, %d members in %.2fs (%.0f members/s)",
            report.periods,
            report.members,
            report.seconds,
            report.members_per_s,
        )
        return report

    async def _rebuild_period(
        self,
        conn: AsyncConnection[Any],
        config: BoardConfig,
        key: standings.PeriodKey,
        expires: int | None,
        progress: Progress | None = None,
    ) -> int:
        pk = keys.period_keys(*key)
        start: tuple[Any, Any] = (-1, "")
        pages = standings.pages(conn, standings.ENTRY_PAGE_SQL, key, start)
        staged = {pk.public: await self._load(pk.public + ":rebuild", pages, progress)}
        if config.policy == "sum":
            now_ms = int(time.time() * 1000)
            since = now_ms - sum_horizon_ms(config) if key[1] == ALL_TIME else 0
            start = ("", "")
            runs = standings.pages(conn, standings.SUM_RUN_PAGE_SQL, key, start, {"since": since})
            staged[pk.runs] = await self._load(pk.runs + ":rebuild", runs, None)
        await self._swap(staged, expires)
        return staged[pk.public]

    async def _load(
        self, key: str, pages: AsyncIterator[tuple[int, bytes]], progress: Progress | None
    ) -> int:
        """Load pages into ``key``: PostgreSQL fetches the next page while Redis takes this."""
        queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue(maxsize=4)

        async def produce() -> None:
            try:
                async for page in pages:
                    await queue.put(page)
            finally:
                await queue.put(None)

        async with _Loader(self.redis, key, progress) as loader:
            producer = asyncio.create_task(produce())
            try:
                while (page := await queue.get()) is not None:
                    await loader.add_page(*page)
            finally:
                if not producer.done():
                    producer.cancel()
                await asyncio.gather(producer, return_exceptions=True)
            producer.result()  # a failed read must not RENAME a half-loaded board
        return loader.loaded

    async def _restore_names(self, conn: AsyncConnection[Any]) -> None:
        """Copy the players table's names into Redis (staged, then renamed into place)."""
        staging = keys.NAMES + ":rebuild"
        await self.redis.delete(staging)
        loaded = 0
        async for chunk in standings.name_chunks(conn):
            await self.redis.hset(staging, mapping=chunk)  # type: ignore[arg-type]
            loaded += len(chunk)
        await self._swap({keys.NAMES: loaded}, None)

    async def _swap(self, staged: dict[str, int], expires: int | None) -> None:
        """Put every staged key (``<key>:rebuild``) in place in one MULTI/EXEC: a sum board's
        total and its counted runs must change together, or a submit landing between them
        would be counted in one and lost from the other. They share a hash tag."""
        pipe = self.redis.pipeline(transaction=True)
        for live, loaded in staged.items():
            if loaded == 0:
                pipe.delete(live, live + ":rebuild")
                continue
            pipe.rename(live + ":rebuild", live)
            if expires is not None:
                pipe.pexpireat(live, expires)
        await pipe.execute()

    async def _verified(self) -> bool:
        return bool(await self.redis.get(MARKER) == (await self._redis_run_id()).encode())

    async def _redis_run_id(self) -> str:
        info = await self.redis.info("server")
        return str(info["run_id"])
