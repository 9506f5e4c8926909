"""Bulk loads of pre-formatted ZADD pages into one Redis key (the rebuild's fast path).

PostgreSQL formats a page of members' ZADD arguments in one aggregate (stores/standings.py
``pages``); a page becomes one ZADD with a bulk byte replace, so Python does no per-member
work: a row-at-a-time COPY, or packing through a generic client, cost more CPU than Redis
spent executing. Replies are read one round behind, and the next page is fetched from
PostgreSQL while Redis takes this one, so both work in parallel.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from rankd.aio import read_ahead
from rankd.periods import PeriodRef

FLUSH_EVERY = 1  # ZADDs (one per page of 20,000 members) per pipeline round trip
PAGES_AHEAD = 4  # pages fetched from PostgreSQL ahead of Redis (about 1 MB each)

Progress = Callable[[int], None]
NodeFor = Callable[[str], Redis]  # the client of the node that owns a key


@dataclass
class SmallPeriod:
    """One period's whole content, read in a batch of many (stores/standings.py) and loaded
    in one round trip with the others (Loads.load_small_periods, staging.py)."""

    ref: PeriodRef
    start_ms: int
    members: int = 0
    entries: bytes = b""  # ZADD arguments in RESP, chr(1) for CR LF
    times: list[tuple[int, int, bytes]] = field(default_factory=list)  # bucket, n, HSET args


def bulk(value: bytes) -> bytes:
    """One RESP bulk string."""
    return b"$%d\r\n%b\r\n" % (len(value), value)


_bulk = bulk


class Loader:
    """Multi-member ZADDs into one key, RESP-encoded here and sent on one connection."""

    def __init__(self, redis: Redis, key: str, progress: Progress | None) -> None:
        self.redis = redis
        self.key = key
        self.progress = progress
        self.head = _bulk(b"ZADD") + _bulk(key.encode())
        self.outgoing: list[bytes] = []
        self.unread = 0
        self.loaded = 0
        self.conn: Any = None

    @classmethod
    async def run(
        cls,
        redis: Redis,
        key: str,
        pages: AsyncIterator[tuple[int, bytes]],
        progress: Progress | None,
    ) -> int:
        """Load ``pages`` into ``key`` (emptied first); returns the members loaded. A failed
        read raises here, so a half-loaded board is never renamed into place."""
        async with cls(redis, key, progress) as loader:
            async for page in read_ahead(pages, PAGES_AHEAD):
                await loader.add_page(*page)
        return loader.loaded

    @classmethod
    async def hashes(
        cls,
        redis: Redis | NodeFor,
        groups: AsyncIterator[tuple[str, int, bytes]],
    ) -> int:
        """HSET each (key, fields, arguments) group into its hash (kept, not emptied: the
        fields are the entries' exact times, and a newer one may land meanwhile).
        ``redis`` is one node's client, or a key's node lookup when the hashes lie on
        several nodes (a sharded period on Redis Cluster)."""
        fields_loaded = 0
        async with _Routed(cls, redis, None) as routed:
            async for key, fields, arguments in groups:
                loader = await routed.loader(key)
                head = _bulk(b"HSET") + _bulk(key.encode())
                body = arguments.replace(b"\x01", b"\r\n")
                loader.outgoing.append(b"*%d\r\n%b%b" % (2 + 2 * fields, head, body))
                fields_loaded += fields
                if len(loader.outgoing) >= 256:
                    await loader._send()
        return fields_loaded

    @classmethod
    async def sharded(
        cls,
        redis: Redis | NodeFor,
        stagings: list[str],
        pages: AsyncIterator[list[tuple[int, int, bytes]]],
        progress: Progress | None,
        *,
        empty: bool = True,
    ) -> list[int]:
        """Load a sharded period's pages, each a list of (shard, members, arguments), into
        the shards' staging keys (emptied first, unless ``empty`` is False: a slice of the
        period loaded beside others) in one pass over the period; returns the members
        loaded per shard. On Redis Cluster (``redis`` a key's node lookup) each shard's
        writes go on a connection to its own node."""
        loaded = [0] * len(stagings)
        heads = [_bulk(b"ZADD") + _bulk(key.encode()) for key in stagings]
        async with _Routed(cls, redis, progress) as routed:
            loaders = [await routed.loader(key) for key in stagings]
            for loader, key in zip(loaders, stagings, strict=True):
                if empty:
                    loader.outgoing.append(command(b"DEL", key.encode()))
            async for page in read_ahead(pages, PAGES_AHEAD):
                for shard, members, arguments in page:
                    loader = loaders[shard]
                    loader.head = heads[shard]
                    await loader.add_page(members, arguments)
                    loaded[shard] += members
        return loaded

    async def __aenter__(self) -> Loader:
        self.conn = await self.redis.connection_pool.get_connection()  # type: ignore[no-untyped-call]
        if self.key:
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


def command(*args: bytes) -> bytes:
    """One command in RESP."""
    return b"*%d\r\n%b" % (len(args), b"".join(_bulk(a) for a in args))


async def run_commands(redis: Redis, commands: list[bytes]) -> list[Any]:
    """Send ``commands`` in one write on one connection and read every reply. An error
    reply raises, and the connection (with replies unread) is dropped, never reused."""
    conn: Any = await redis.connection_pool.get_connection()  # type: ignore[no-untyped-call]
    done = False
    try:
        await conn.send_packed_command(commands, check_health=False)
        replies = [await conn.read_response() for _ in commands]
        done = True
        return replies
    finally:
        if not done:
            await conn.disconnect()
        await redis.connection_pool.release(conn)


class _Routed:
    """Loaders by node, opened as keys need them: each key's writes go on a connection to
    the node that owns it (one loader on a standalone or Sentinel Redis). At most one
    connection per cluster node."""

    def __init__(self, cls: type[Loader], redis: Redis | NodeFor, progress: Progress | None):
        self.cls = cls
        if isinstance(redis, Redis):
            node = redis
            self.node_for: NodeFor = lambda _key: node
        else:
            self.node_for = redis
        self.progress = progress
        self.by_node: dict[int, Loader] = {}
        self.stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> _Routed:
        await self.stack.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stack.__aexit__(*exc)

    async def loader(self, key: str) -> Loader:
        node = self.node_for(key)
        found = self.by_node.get(id(node))
        if found is None:
            found = await self.stack.enter_async_context(self.cls(node, "", self.progress))
            self.by_node[id(node)] = found
        return found
