"""A partition on the Sentinel topology: the Redis primary cut off from its replica and the
Sentinels while the service still reaches it, the way Redis loses acknowledged writes in
Jepsen's analyses.

The test owns a proxy process (tests/support/partition_proxy.py) that every client of the
primary goes through: the Sentinels monitor it there and the replica replicates from it.
Under load it cuts the connections of the replica's and the Sentinels' processes (not the
service's) for PARTITION_S: the Sentinels promote the replica while the service keeps
writing to the old primary, and a stray write of the test's own lands there too. On heal
the Sentinels turn the old primary into a replica of the new one, which drops what only the
old one had. Then, with no person doing anything, the checks of test_pauses.judge hold (no
acknowledged run lost, Redis and PostgreSQL agree, /readyz 200 again), the old primary is a
replica, and the stray write is gone from both nodes.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

import pytest
from redis.asyncio import Redis

from rankd.embedded.lifecycle import start_all
from rankd.embedded.nats_server import NatsNode
from rankd.embedded.ports import HOST, pick_ports
from rankd.embedded.postgres_server import PostgresServer
from rankd.embedded.redis_server import RedisNode, SentinelNode
from rankd.embedded.topology import TopologyServers, watch_ready
from tests.system.test_pauses import PAUSE_S, Scene, _is, fault_under_load, judge, role, until
from tests.system.test_topology_failures import sentinel_primary, serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
PARTITION_S = PAUSE_S
STRAY_KEY = "partition:stray-write"


@dataclass
class ProxyProcess:
    """The proxy in front of the primary, driven through its stdin."""

    process: subprocess.Popen[bytes]
    port: int

    @classmethod
    def start(cls, port: int, target_port: int) -> ProxyProcess:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.partition_proxy", str(port), str(target_port)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        proxy = cls(process, port)
        proxy._said("ready")
        return proxy

    def _said(self, word: str) -> None:
        line = cast(IO[bytes], self.process.stdout).readline().decode().strip()
        assert line == word, f"the proxy said {line!r}, not {word!r}"

    def _tell(self, command: str) -> None:
        stdin = cast(IO[bytes], self.process.stdin)
        stdin.write(f"{command}\n".encode())
        stdin.flush()
        self._said("ok")

    async def cut(self, pids: set[int]) -> None:
        await asyncio.to_thread(self._tell, "cut " + " ".join(map(str, sorted(pids))))

    async def heal(self) -> None:
        await asyncio.to_thread(self._tell, "heal")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


@pytest.fixture(scope="module")
def cut_tree(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TopologyServers, ProxyProcess]]:
    """A primary, its replica, three Sentinels (every one of them reaching the primary through
    the proxy), three clustered NATS servers and PostgreSQL."""
    data = Path(tmp_path_factory.mktemp("partitions")) / "data"
    taken: set[int] = set()
    primary_port, replica_port, proxy_port = pick_ports(3, taken)
    sentinel_ports = pick_ports(3, taken)
    nats_ports, monitor_ports, route_ports = (pick_ports(3, taken) for _ in range(3))
    proxy = ProxyProcess.start(proxy_port, primary_port)
    # known to the others at the proxy's port, also once it is a replica itself
    nodes = [
        RedisNode(data, primary_port, "r0", ["--replica-announce-port", str(proxy_port)]),
        RedisNode(data, replica_port, "r1", ["--replicaof", HOST, str(proxy_port)]),
    ]
    tree = TopologyServers(
        "sentinel",
        list(nodes),
        [SentinelNode(data, p, f"s{i}", proxy_port) for i, p in enumerate(sentinel_ports)],
        [NatsNode(data, i, p, monitor_ports[i], route_ports) for i, p in enumerate(nats_ports)],
        PostgresServer(data),
    )
    try:
        start_all([*tree.redis_nodes, *tree.nats_nodes, cast(PostgresServer, tree.postgres)])
        for sentinel in tree.sentinels:
            sentinel.start()
        watch_ready(sentinel_ports)
        yield tree, proxy
    finally:
        tree.stop()
        proxy.stop()


async def exists(port: int, key: str) -> int:
    client = Redis(port=port, socket_timeout=2)
    try:
        return int(await client.exists(key))
    finally:
        await client.aclose()


async def test_a_primary_cut_off_from_its_replica_and_sentinels_loses_no_acknowledged_run(
    cut_tree: tuple[TopologyServers, ProxyProcess], tmp_path: Path
) -> None:
    tree, proxy = cut_tree
    name = "partition-sentinel-primary"
    began = time.monotonic()
    async with serving(tree, tmp_path) as d:
        old = await sentinel_primary(tree)
        new = next(n for n in tree.redis_nodes if n.port != old.port)
        others = {new.pid, *(s.pid for s in tree.sentinels)}
        assert None not in others
        scene = Scene(d.http, d.board, tree.postgres_url, tree.nats_url, PARTITION_S)
        acked_after_promotion = 0

        async def cut() -> None:
            await proxy.cut(cast(set[int], others))

        async def during() -> None:
            nonlocal acked_after_promotion
            took = await until(lambda: _is(role(new.port), b"master"), PARTITION_S - 3)
            print(f"\n[{name}] replica {new.port} promoted {took}s into the partition")
            if took is None:
                scene.notes.append(f"replica not promoted within {PARTITION_S - 3}s")
                return
            # the old primary still takes what the service (and this test) send it
            stray = Redis(port=old.port, socket_timeout=2)
            try:
                await stray.set(STRAY_KEY, "written on the cut-off side")
            finally:
                await stray.aclose()
            before = len(scene.ledger.acked)
            await asyncio.sleep(2)
            acked_after_promotion = len(scene.ledger.acked) - before

        await fault_under_load(scene, cut, proxy.heal, during)
        print(f"[{name}] runs acknowledged in 2 s after the promotion: {acked_after_promotion}")
        if acked_after_promotion == 0:  # then nothing was written on the cut-off side
            scene.notes.append("no run was acknowledged while two primaries took writes")
        rejoined = await until(lambda: _is(role(old.port), b"slave"), 30)
        print(f"[{name}] old primary {old.port} a replica {rejoined}s after the heal")
        if rejoined is None:
            scene.notes.append(f"old primary {old.port} did not rejoin as a replica")
        gone = await until(
            lambda: _none(exists(old.port, STRAY_KEY), exists(new.port, STRAY_KEY)), 30
        )
        if gone is None:
            scene.notes.append("the old primary's stray write is still there")
        await judge(name, scene)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


async def _none(*counts: Awaitable[int]) -> bool:
    return sum([await c for c in counts]) == 0
