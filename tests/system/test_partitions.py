"""Partitions: a Redis primary cut off from the other Redis processes while the service still
reaches it, the way Redis loses acknowledged writes in Jepsen's analyses.

The test owns a proxy process (tests/support/partition_proxy.py) that every connection to
the Redis nodes goes through: the nodes announce the proxy's ports, so the Sentinels, the
replicas, the cluster bus and the service all use them. Under load it cuts, for PARTITION_S,
the connections between the primary and every other Redis process (replicas, Sentinels,
the other cluster nodes), not the service's. The replica is promoted while the service (and
this test, with a stray key) still write to the old primary. On heal the old primary
becomes a replica of the new one, which drops what only it had. Then, with no person doing
anything, the checks of test_pauses.judge hold (no acknowledged run lost, Redis and
PostgreSQL agree, /readyz 200 again), the old primary is a replica, and the stray key is
gone from both nodes. On a single Redis (no replica to promote) the service's own
connections are cut instead, and the same judge applies.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from redis.asyncio import Redis
from redis.exceptions import ClusterDownError

from rankd.embedded.lifecycle import start_all
from rankd.embedded.nats_server import NatsNode
from rankd.embedded.ports import BUS_OFFSET, HOST, pick_ports
from rankd.embedded.postgres_server import PostgresServer
from rankd.embedded.redis_server import RedisNode, RedisServer, SentinelNode
from rankd.embedded.topology import TopologyServers, cluster_nodes, form_cluster, watch_ready
from rankd.stores.redis.connection import connect
from rankd.stores.redis.url import parse_redis_url
from tests.support.partition_proxy import ProxyProcess
from tests.system.test_pauses import (
    PAUSE_S,
    Scene,
    _equal,
    _is,
    board_on,
    fault_under_load,
    judge,
    process_tree,
    role,
    until,
)
from tests.system.test_topology_failures import sentinel_primary, serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PARTITION_S = PAUSE_S


@dataclass
class Proxied(TopologyServers):
    """One Redis or a cluster, reached at the proxy's ports (``front``, one a node)."""

    front: list[int] | None = None

    @property
    def redis_url(self) -> str:
        hosts = ",".join(f"{HOST}:{p}" for p in self.front or [])
        return f"redis+cluster://{hosts}" if self.topology == "cluster" else f"redis://{hosts}"


@dataclass
class CutTree:
    tree: TopologyServers
    proxy: ProxyProcess
    front: dict[int, int]  # a Redis node's own port -> the proxy's port in front of it

    def node_at(self, front_port: int) -> RedisServer:
        return next(n for n in self.tree.redis_nodes if self.front[n.port] == front_port)


def start_servers(tree: TopologyServers) -> None:
    start_all([*tree.redis_nodes, *tree.nats_nodes, cast(PostgresServer, tree.postgres)])


def nats_nodes(data: Path, taken: set[int]) -> list[NatsNode]:
    ports, monitor, routes = (pick_ports(3, taken) for _ in range(3))
    return [NatsNode(data, i, p, monitor[i], routes) for i, p in enumerate(ports)]


@pytest.fixture(scope="module")
def sentinel_cut(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CutTree]:
    """A primary, its replica and three Sentinels, all reaching the primary through the
    proxy; three clustered NATS servers and PostgreSQL."""
    data = Path(tmp_path_factory.mktemp("partitions")) / "data"
    taken: set[int] = set()
    primary, replica, front = pick_ports(3, taken)
    proxy = ProxyProcess.start([(front, primary)])
    nodes: list[RedisServer] = [
        # known to the others at the proxy's port, also once it is a replica itself
        RedisNode(data, primary, "r0", ["--replica-announce-port", str(front)]),
        RedisNode(data, replica, "r1", ["--replicaof", HOST, str(front)]),
    ]
    sentinel_ports = pick_ports(3, taken)
    sentinels = [SentinelNode(data, p, f"s{i}", front) for i, p in enumerate(sentinel_ports)]
    tree = TopologyServers(
        "sentinel", nodes, sentinels, nats_nodes(data, taken), PostgresServer(data)
    )
    try:
        start_servers(tree)
        for sentinel in sentinels:
            sentinel.start()
        watch_ready(sentinel_ports)
        yield CutTree(tree, proxy, {primary: front, replica: replica})
    finally:
        tree.stop()
        proxy.stop()


@pytest.fixture(scope="module")
def cluster_cut(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CutTree]:
    """Six cluster nodes (three primaries, a replica each), every one's port and bus port
    behind the proxy; three clustered NATS servers and PostgreSQL."""
    data = Path(tmp_path_factory.mktemp("partitions")) / "data"
    taken: set[int] = set()
    own = pick_ports(6, taken, bus=True)
    front = pick_ports(6, taken, bus=True)
    proxy = ProxyProcess.start(
        [(f, o) for f, o in zip(front, own, strict=True)]
        + [(f + BUS_OFFSET, o + BUS_OFFSET) for f, o in zip(front, own, strict=True)]
    )
    nodes = cast(list[RedisNode], cluster_nodes(data, own))
    for node, port in zip(nodes, front, strict=True):
        # a new list: the nodes share the one cluster_nodes gave them
        node.extra = [*node.extra, "--cluster-announce-port", str(port)]
        node.extra += ["--cluster-announce-bus-port", str(port + BUS_OFFSET)]
    tree = Proxied("cluster", list(nodes), [], nats_nodes(data, taken), PostgresServer(data), front)
    try:
        start_servers(tree)
        form_cluster(front)  # through the proxy, so each node meets the others there
        yield CutTree(tree, proxy, dict(zip(own, front, strict=True)))
    finally:
        tree.stop()
        proxy.stop()


@pytest.fixture(scope="module")
def single_cut(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CutTree]:
    """One Redis behind the proxy; three clustered NATS servers and PostgreSQL."""
    data = Path(tmp_path_factory.mktemp("partitions")) / "data"
    taken: set[int] = set()
    own, front = pick_ports(2, taken)
    proxy = ProxyProcess.start([(front, own)])
    node = RedisNode(data, own, "r0", [])
    tree = Proxied("single", [node], [], nats_nodes(data, taken), PostgresServer(data), [front])
    try:
        start_servers(tree)
        yield CutTree(tree, proxy, {own: front})
    finally:
        tree.stop()
        proxy.stop()


async def exists(port: int, key: str) -> int:
    client = Redis(port=port, socket_timeout=2)
    try:
        if (await client.info("cluster")).get("cluster_enabled"):
            await client.readonly()  # a cluster replica answers reads then
        return int(await client.exists(key))
    finally:
        await client.aclose()


async def nowhere(key: str, *ports: int) -> bool:
    return sum([await exists(p, key) for p in ports]) == 0


async def write_stray(port: int, key: str) -> None:
    """What a client on the old primary's side writes during the partition."""
    client = Redis(port=port, socket_timeout=2)
    try:
        await client.set(key, "written on the cut-off side")
    finally:
        await client.aclose()


async def partition_under_load(
    name: str,
    scene: Scene,
    cut: CutTree,
    old: RedisServer,
    new: RedisServer,
    stray: str,
    after_promotion: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Cut ``old`` off from every other Redis process under load, write ``stray`` on it,
    wait for ``new`` to be promoted (then ``after_promotion()``), heal; then the module
    docstring's checks."""
    others = {n.pid for n in [*cut.tree.redis_nodes, *cut.tree.sentinels] if n is not old}
    assert old.pid is not None and None not in others
    acked_on_the_old_side = 0

    async def begin() -> None:
        front = cut.front[old.port]
        await cut.proxy.cut(front, cast(set[int], others))
        if cut.tree.topology == "cluster":  # its bus, and its own links to the others' buses
            await cut.proxy.cut(front + BUS_OFFSET, cast(set[int], others))
            for node in cut.tree.redis_nodes:
                if node is not old:
                    await cut.proxy.cut(cut.front[node.port] + BUS_OFFSET, {cast(int, old.pid)})

    stray_written = False

    async def during() -> None:
        nonlocal acked_on_the_old_side, stray_written
        try:
            await write_stray(old.port, stray)
            stray_written = True
        except ClusterDownError:  # a cluster primary already sure it is cut off refuses
            print(f"\n[{name}] the old primary refused the stray write: already fenced")
        before = len(scene.ledger.acked)
        took = await until(lambda: _is(role(new.port), b"master"), PARTITION_S - 3)
        acked_on_the_old_side = len(scene.ledger.acked) - before
        print(f"\n[{name}] replica {new.port} promoted {took}s into the partition")
        if took is None:
            scene.notes.append(f"replica not promoted within {PARTITION_S - 3}s")
        elif after_promotion is not None:
            await after_promotion()

    await fault_under_load(scene, begin, cut.proxy.heal, during)
    print(f"[{name}] runs acknowledged until the promotion: {acked_on_the_old_side}")
    if acked_on_the_old_side == 0:  # then the old primary took no run meanwhile
        scene.notes.append("no run was acknowledged while the old primary was cut off")
    rejoined = await until(lambda: _is(role(old.port), b"slave"), 30)
    print(f"[{name}] old primary {old.port} a replica {rejoined}s after the heal")
    if rejoined is None:
        scene.notes.append(f"old primary {old.port} did not rejoin as a replica")
    if stray_written and await until(lambda: nowhere(stray, old.port, new.port), 30) is None:
        scene.notes.append("the old primary's stray write is still there")
    await judge(name, scene)


async def test_a_sentinel_primary_cut_off_from_its_replica_and_sentinels_loses_nothing(
    sentinel_cut: CutTree, tmp_path: Path
) -> None:
    """Two instances take runs and share the log consumer. Once the replica is promoted, the first
    instance's connections to the old primary are reset: it asks the Sentinels again and
    restores the new primary, while the second one's stay on the old primary (its
    consumer applying and acking batches there) until the heal, when it must catch up."""
    name = "partition-sentinel-primary"
    began = time.monotonic()
    tree = sentinel_cut.tree
    async with serving(tree, tmp_path / "a") as d, serving(tree, tmp_path / "b") as second:
        old = cast(RedisServer, await sentinel_primary(tree))
        new = next(n for n in tree.redis_nodes if n is not old)
        scene = Scene(d.http, d.board, tree.postgres_url, tree.nats_url)
        scene.pause_s = PARTITION_S
        scene.more_http = [second.http]
        # the second instance's runs on the old primary are readable once it catches up
        scene.ready_means_all_readable = False

        async def switch_the_first() -> None:
            pids = set(process_tree(d.service.pid))
            await sentinel_cut.proxy.drop(sentinel_cut.front[old.port], pids)

        await partition_under_load(
            name, scene, sentinel_cut, old, new, "partition:stray", switch_the_first
        )
        print(f"[{name}] unreadable at the first 200 after the heal: {len(scene.missing_at_ready)}")
        said = [line for line in second.service_log().splitlines() if "caught up" in line]
        print(f"[{name}] the second instance: {said[-1:] or 'nothing to catch up'}")
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


async def test_a_cluster_primary_cut_off_from_the_other_nodes_loses_nothing(
    cluster_cut: CutTree, tmp_path: Path
) -> None:
    name = "partition-cluster-primary"
    began = time.monotonic()
    tree = cluster_cut.tree
    async with serving(tree, tmp_path) as d:
        tag = f"{{{d.board}:all-time:all-time}}"
        old = cluster_cut.node_at(await slot_owner(tree, f"lb:{tag}"))
        replicas = [
            n
            for n in tree.redis_nodes
            if n is not old
            and (r := await role(n.port))[0] == b"slave"
            and int(r[2]) == cluster_cut.front[old.port]
        ]
        assert len(replicas) == 1, replicas
        scene = Scene(d.http, d.board, tree.postgres_url, tree.nats_url)
        scene.pause_s = PARTITION_S
        await partition_under_load(name, scene, cluster_cut, old, replicas[0], f"stray:{tag}")
        on_new = await board_on(replicas[0].port, f"lb:{tag}")
        same = await until(lambda: _equal(board_on(old.port, f"lb:{tag}"), on_new), 10)
        print(f"[{name}] old primary holds the new primary's {len(on_new)} entries: {same}s")
        assert same is not None, "the old primary holds writes the new primary lacks"
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


async def slot_owner(tree: TopologyServers, key: str) -> int:
    """The port the cluster names for ``key``'s primary (the proxy's, in front of it)."""
    client = connect(parse_redis_url(tree.redis_url), max_connections=4, pool_timeout_s=5)
    try:
        await client.ping()
        return int(cast(Any, client).get_node_from_key(key).port)
    finally:
        await client.aclose()


async def test_the_service_cut_off_from_its_redis_loses_nothing(
    single_cut: CutTree, tmp_path: Path
) -> None:
    """No replica to promote: the service's own connections to its one Redis are cut for
    PARTITION_S (Redis runs on), as a pause would stall them; then healed."""
    name = "partition-single-redis"
    began = time.monotonic()
    tree = single_cut.tree
    async with serving(tree, tmp_path) as d:
        front = single_cut.front[tree.redis_nodes[0].port]
        scene = Scene(d.http, d.board, tree.postgres_url, tree.nats_url)
        scene.pause_s = PARTITION_S

        async def cut() -> None:
            await single_cut.proxy.cut(front, set(process_tree(d.service.pid)))

        await fault_under_load(scene, cut, single_cut.proxy.heal)
        await judge(name, scene)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")
