"""Which Redis to talk to and how: one standalone server, a Cluster or a Sentinel group.

The URL picks the mode (contract "Starting it"):

- ``redis://[user:pass@]host:port[/db]`` (``rediss://``: TLS), ``unix:///path``: one server;
- ``redis+cluster://[user:pass@]host:port[,host:port...]`` (``rediss+cluster://``): a
  Redis Cluster, any of its nodes as seeds; the client learns the slot map from them;
- ``redis+sentinel://[user:pass@]host:port[,host:port...]/<master-name>[/db]``
  (``rediss+sentinel://``): the primary the Sentinels name, found again after a failover.

``RedisConn`` is what every concern of the Redis store sends through: the client, its
per-node clients, the batcher (batch.py) and the script calls (scripts.py: a lost script
cache), with Redis's errors turned into ``Unavailable`` (``reachable``).

Everything above the store speaks to one client object whatever the mode: redis-py's
cluster client routes each command and script call by its keys' slot, splits pipelines per
node and follows MOVED after a failover; the Sentinel pool asks the Sentinels for the
primary on every new connection and drops its connections when one answers READONLY.
With RANKD_REDIS_READ_FROM_REPLICAS, the cluster client sends plain read commands to
replicas, and a Sentinel group's client sends the read paths' plain sorted-set and hash
reads to its replicas (``ReplicaReads``); script calls and pipelines stay on the primary.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any, cast

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.cluster import LoadBalancingStrategy
from redis.exceptions import RedisError, ResponseError
from redis.maint_notifications import MaintNotificationsConfig

from rankd.errors import PeriodBusy, Unavailable
from rankd.stores.redis import keys
from rankd.stores.redis.batch import Batcher
from rankd.stores.redis.node_info import primaries_info
from rankd.stores.redis.packing import (
    FastConnection,
    FastSentinelConnection,
    FastSentinelSSLConnection,
)
from rankd.stores.redis.replicas import ReplicaReads
from rankd.stores.redis.scripts import Call, Command, call_script, load_all, run_pipeline
from rankd.stores.redis.url import RedisTarget, parse_redis_url

# Off, said outright: redis-py 8's default ("auto") also turns off the pool's check, as a
# connection is handed out, that the server has not closed it, so after a Redis restart
# each idle pooled connection failed one request (tests/integration/stores/
# test_redis_restart.py). The notifications are a managed-Redis feature we do not use.
NO_MAINTENANCE_NOTICES = MaintNotificationsConfig(enabled=False)


def connect(
    target: RedisTarget,
    *,
    max_connections: int,
    pool_timeout_s: float,
    read_from_replicas: bool = False,
) -> Redis:
    """A client for ``target`` (not connected yet: the first command connects).

    Typed as ``Redis`` for the store: the cluster client answers the same commands, pipelines
    and script calls (see the module's docstring), which is all the store uses of it.
    """
    common: dict[str, Any] = {
        "username": target.username,
        "password": target.password,
        "socket_connect_timeout": 5,
        # said outright: redis-py 8 defaults to a 5 s read timeout (see below)
        "socket_timeout": None,
        "socket_keepalive": True,
        "maint_notifications_config": NO_MAINTENANCE_NOTICES,
    }
    if target.mode == "cluster":
        cluster = RedisCluster(
            startup_nodes=[ClusterNode(h, p) for h, p in target.hosts],
            ssl=target.tls,
            max_connections=max_connections,
            # a failover's new primary is found by asking again: a few quick tries, then the
            # error reaches the request (503) rather than holding it for long
            cluster_error_retry_attempts=2,
            # only plain read commands go to replicas: every script call (a submit's answer,
            # a player's own view, a top list) stays on the primary, which is never behind
            load_balancing_strategy=(
                LoadBalancingStrategy.ROUND_ROBIN_REPLICAS if read_from_replicas else None
            ),
            **common,
        )
        return cast(Redis, cluster)
    if target.mode == "sentinel":
        sentinel = Sentinel(
            list(target.hosts),
            sentinel_kwargs={"socket_connect_timeout": 2, "ssl": target.tls},
            ssl=target.tls,
            db=target.db,
            **common,
        )
        # the class says TLS or not (the pool takes ``ssl`` only when it picks the class)
        packing = FastSentinelSSLConnection if target.tls else FastSentinelConnection
        sentinels = SentinelConnectionPool(  # type: ignore[no-untyped-call]
            target.master,
            sentinel,
            max_connections=max_connections,
            connection_class=packing,
            db=target.db,
            **common,
        )
        if read_from_replicas:
            replicas = SentinelConnectionPool(  # type: ignore[no-untyped-call]
                target.master,
                sentinel,
                is_master=False,  # the replicas in turn, the primary when none answers
                max_connections=max_connections,
                connection_class=packing,
                db=target.db,
                **common,
            )
            return ReplicaReads(sentinels, Redis(connection_pool=replicas))
        return Redis(connection_pool=sentinels)
    # A blocking pool: under a burst, requests wait for a connection instead of failing.
    # No socket_timeout: redis-py wraps every read in an asyncio timeout for it, the largest
    # single cost in the read profile, and a busy Redis (a large rebuild's swap, a flush of
    # millions of entries) would turn into errors; a dead Redis still fails fast (reset).
    # redis-py 8 made 5 s the default, so None is passed outright.
    # packed by hiredis (packing.py); a rediss:// or unix:// URL keeps the class it implies
    plain = (
        {"connection_class": FastConnection} if target.url.lower().startswith("redis://") else {}
    )
    pool = BlockingConnectionPool.from_url(
        target.url,
        **plain,
        max_connections=max_connections,
        timeout=pool_timeout_s,
        socket_connect_timeout=5,
        socket_timeout=None,
        socket_keepalive=True,
        maint_notifications_config=NO_MAINTENANCE_NOTICES,
    )
    return Redis(connection_pool=pool)


def is_cluster(client: Redis) -> bool:
    return isinstance(client, RedisCluster)


class NodeClients:
    """A plain client per cluster primary, for what must run on one connection to the node
    that owns a key: the rebuild's raw bulk loads and its MULTI/EXEC swaps (all of one hash
    tag). Bounded by the cluster's node count; on a standalone or Sentinel Redis it is the
    client itself."""

    def __init__(self, client: Redis, *, tls: bool = False, max_connections: int = 8) -> None:
        self.client = client
        self.tls = tls
        self.max_connections = max_connections
        self._nodes: dict[str, Redis] = {}

    def for_key(self, key: str) -> Redis:
        if not isinstance(self.client, RedisCluster):
            return self.client
        cluster = cast(RedisCluster, self.client)
        node = cluster.get_node_from_key(key)
        if node is None:
            raise ConnectionError(f"no Redis Cluster node serves {key!r} right now")
        found = self._nodes.get(node.name)
        if found is None:
            kwargs = cluster.get_connection_kwargs()
            found = Redis(
                host=node.host,
                port=node.port,
                ssl=self.tls,
                username=kwargs.get("username"),
                password=kwargs.get("password"),
                max_connections=self.max_connections,
                socket_connect_timeout=5,
                socket_timeout=None,  # a bulk load or a swap may keep the node busy for long
                maint_notifications_config=NO_MAINTENANCE_NOTICES,
            )
            self._nodes[node.name] = found
        return found

    async def close(self) -> None:
        for node in self._nodes.values():
            await node.aclose()
        self._nodes.clear()


async def identity(client: Redis | RedisCluster) -> str:
    """Which Redis processes hold the boards now: the primary's run id, or on a cluster
    every primary's, sorted. A restart or a failover changes it."""
    return ",".join(sorted(str(i["run_id"]) for i in await primaries_info(client, "server")))


HASH_LISTPACK = "hash-max-ziplist-entries"


def _config_values(reply: Any, name: str) -> list[str]:
    """A CONFIG GET's value(s) for ``name``: one server's {name: value}, or a cluster
    client's {node: {name: value}}."""

    def text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    if not isinstance(reply, dict):
        return []
    flat = {text(k): v for k, v in reply.items()}
    if name in flat:
        return [text(flat[name])]
    return [v for r in reply.values() if isinstance(r, dict) for v in _config_values(r, name)]


@contextlib.contextmanager
def reachable(what: str = "Redis is unavailable right now; retry shortly") -> Iterator[None]:
    """Redis's errors become Unavailable: unreachable, timed out, or answering an error
    such as OOM or READONLY (a failover); retrying later can succeed."""
    try:
        yield
    except (RedisError, OSError) as exc:
        busy = period_busy(exc)
        if busy is not None:
            raise busy from exc
        raise Unavailable(what) from exc


# a writing script's refusal (lua/lib.lua refuse_while_restoring), wherever redis-py puts
# it in its message (a pipeline's error is prefixed with the command's place)
_BUSY = re.compile(r"\b(RESTORING|TORN) (lb:\{[^{}]+\})")


def period_busy(exc: BaseException) -> PeriodBusy | None:
    """The PeriodBusy a Redis error reply stands for, or None for any other error."""
    if not isinstance(exc, ResponseError):
        return None
    match = _BUSY.search(str(exc))
    period = None if match is None else keys.period_of(match[2])
    if match is None or period is None:
        return None
    torn = match[1] == "TORN"
    why = "lost its rebuild midway and is being rebuilt" if torn else "is being restored"
    return PeriodBusy(
        f"board {period[0]!r}, {period[1]} {period[2]}: {why}; retry shortly",
        key=match[2],
        board_id=period[0],
        torn=torn,
    )


class RedisConn:
    """One Redis (standalone, Cluster or Sentinel, as the URL says) and the ways to send to
    it: a bad URL raises BadRedisUrl here, before anything connects."""

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 64,
        pool_timeout_s: float = 10.0,
        batch_in_flight: int = 4,
        read_from_replicas: bool = False,
    ) -> None:
        self.target = parse_redis_url(url)
        # plain reads may go to replicas (never a pipeline's: those stay on the primary)
        self.read_from_replicas = read_from_replicas
        # when Redis last answered this process (monotonic): a stalled Redis answers nobody,
        # a busy one keeps answering (aio.unless_stalled tells them apart)
        self.answered_at = time.monotonic()
        self.client = connect(
            self.target,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
            read_from_replicas=read_from_replicas,
        )
        # what must run on one node's connection (bulk loads, MULTI/EXEC swaps)
        self.nodes = NodeClients(self.client, tls=self.target.tls)
        # the request paths' calls share pipelines (batch.py); 0: each its own
        self.batch = (
            Batcher(self.client, max_in_flight=batch_in_flight) if batch_in_flight else None
        )

    async def on_primary(self, *args: Any) -> Any:
        """A plain command (its key ``args[1]``) on the primary that owns the key, never a
        replica, whatever reads from replicas are set to: for what must not lag (a closed
        period's pages before its keys are unlinked)."""
        if isinstance(self.client, ReplicaReads):
            return await self.client.on_primary(*args)
        node = self.nodes.for_key(str(args[1]))
        return await node.execute_command(*args)  # type: ignore[no-untyped-call]

    async def open(self) -> None:
        with reachable():
            await load_all(self.client)

    async def forget_connections(self) -> None:
        """Close every pooled connection, idle or in use: each next command asks the
        Sentinels (or the URL) for the primary again. Once the primary has changed, a
        connection left on the old one writes where nobody reads: a partition's old primary
        takes writes until it learns it was replaced. A cluster needs none of it: a
        primary cut off from the majority refuses writes after the node timeout, and the
        client follows the slots' new owner."""
        if is_cluster(self.client):
            return
        with reachable():
            await self.client.connection_pool.disconnect()
            if isinstance(self.client, ReplicaReads):
                await self.client.replicas.connection_pool.disconnect()

    async def close(self) -> None:
        await self.nodes.close()
        await self.client.aclose()

    def _answered(self) -> None:
        self.answered_at = time.monotonic()

    async def ping(self) -> None:
        with reachable():
            await self.client.ping()
        self._answered()

    async def ping_every_primary(self) -> None:
        """Every primary answers: on a cluster, writes to a dead primary's slots fail while
        the others answer a plain PING, until its replica is promoted."""
        with reachable():
            if is_cluster(self.client):
                cluster = cast(RedisCluster, self.client)
                await cluster.ping(target_nodes=RedisCluster.PRIMARIES)
            else:
                await self.client.ping()
        self._answered()

    async def pipeline(self, calls: Sequence[Call], extra: Sequence[Command] = ()) -> list[Any]:
        """A request's calls in one round trip, shared with concurrent requests' when
        batching is on."""
        if self.batch is not None:
            replies = await self.batch.run(calls, extra)
        else:
            replies = await run_pipeline(self.client, calls, extra)
        self._answered()
        return replies

    async def call(self, call: Call) -> Any:
        """One script call, shared with concurrent requests' when batching is on."""
        if self.batch is not None:
            reply = await self.batch.call(call)
        else:
            reply = await call_script(self.client, call)
        self._answered()
        return reply

    async def script(self, call: Call) -> Any:
        """One script call on its own (a bare EVALSHA: no pipeline, no batcher)."""
        reply = await call_script(self.client, call)
        self._answered()
        return reply

    async def run(self, calls: Sequence[Call], extra: Sequence[Command] = ()) -> list[Any]:
        """Calls in one pipeline of their own (never batched with other requests')."""
        replies = await run_pipeline(self.client, calls, extra)
        self._answered()
        return replies

    async def hash_listpack_limit(self) -> int | None:
        """The smallest ``hash-max-ziplist-entries`` (7.x: ``hash-max-listpack-entries``)
        over the primaries, or None where CONFIG is not allowed (many managed Redis)."""
        try:
            if is_cluster(self.client):
                cluster = cast(RedisCluster, self.client)
                replies = await cluster.config_get(
                    HASH_LISTPACK, target_nodes=RedisCluster.PRIMARIES
                )
            else:
                replies = await self.client.config_get(HASH_LISTPACK)
        except (RedisError, OSError):
            return None
        values = [int(v) for v in _config_values(replies, HASH_LISTPACK)]
        return min(values) if values else None

    async def memory(self) -> tuple[int, int]:
        """The fullest primary's (used_memory, maxmemory) in bytes; maxmemory 0: no limit."""
        nodes = await self.memory_nodes()
        return max(nodes, key=lambda node: node[0] / max(node[1], 1), default=(0, 0))

    async def memory_nodes(self) -> list[tuple[int, int]]:
        """Each primary's (used_memory, maxmemory) in bytes (one pair unless a cluster)."""
        with reachable():
            nodes = await primaries_info(self.client, "memory")
        return [(int(i.get("used_memory", 0)), int(i.get("maxmemory", 0))) for i in nodes]
