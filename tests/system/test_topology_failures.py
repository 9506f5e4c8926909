"""Failover with nothing acknowledged lost, on the cluster and Sentinel topologies.

One embedded tree per topology for the module (six Redis Cluster nodes or a primary, a
replica and three Sentinels; three clustered NATS servers; one PostgreSQL), one `rankd
serve` subprocess on it (two for the instance test), and the ledger of tests/system/test_failures:
several writers on two boards, two windows each, while a part is killed with SIGKILL. The
service must answer again within 20 s, answer only 2xx or 503 meanwhile, and afterwards
every acknowledged run is on its board. Each test prints ``acknowledged lost: L of N`` and
the failover time (kill to the first 2xx of a run sent after it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from rankd.embedded import free_port
from rankd.embedded.process import ServerProcess
from rankd.embedded.topology import TopologyServers, start_topology
from rankd.stores.redis.connection import connect
from rankd.stores.redis.url import parse_redis_url
from tests.system.test_failures import (
    ADMIN_H,
    MAX_RUN_SCORE,
    WINDOWS,
    Deployment,
    Ledger,
    read_log,
    service_env,
    settle,
    stream,
    verdict_failures,
    wait_acked,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

SERVES_AGAIN_WITHIN_S = 20.0


@pytest.fixture(scope="module")
def cluster_tree(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tree = start_topology(Path(tmp_path_factory.mktemp("cluster")) / "data", "cluster")
    yield tree
    tree.stop()


@pytest.fixture(scope="module")
def sentinel_tree(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tree = start_topology(Path(tmp_path_factory.mktemp("sentinel")) / "data", "sentinel")
    yield tree
    tree.stop()


@contextlib.asynccontextmanager
async def serving(tree: TopologyServers, directory: Path) -> AsyncIterator[Deployment]:
    """One `rankd serve` on ``tree`` (stopped afterwards) and a fresh board."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    port = free_port()
    # the log position recorded often: a killed primary's replica has a recent one
    env = service_env(cast(Any, tree), {"RANKD_STREAM_REPLICAS": "3", "RANKD_LAG_REFRESH_S": "0.5"})
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}",
        timeout=httpx.Timeout(15.0, connect=3.0),
        limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
    ) as http:
        d = Deployment(cast(Any, tree), directory, port, env, http)
        try:
            await d.start_service()
            await d.create_board()
            yield d
        except BaseException:
            print(f"--- service log (last lines) ---\n{d.service_log()}")
            raise
        finally:
            await asyncio.to_thread(d.stop_services)


async def second_board(d: Deployment) -> str:
    board = f"fail2-{time.monotonic_ns()}"
    response = await d.http.put(
        f"/v1/boards/{board}",
        json={"windows": list(WINDOWS), "max_run_score": MAX_RUN_SCORE},
        headers=ADMIN_H,
    )
    assert response.status_code == 201, response.text
    return board


async def cluster_primary(tree: TopologyServers, key: str) -> ServerProcess:
    """The running node that serves ``key``'s slot as primary now."""
    client = connect(parse_redis_url(tree.redis_url), max_connections=4, pool_timeout_s=5)
    try:
        await client.ping()
        node = cast(Any, client).get_node_from_key(key)
        return next(n for n in tree.redis_nodes if n.port == node.port)
    finally:
        await client.aclose()


async def sentinel_primary(tree: TopologyServers) -> ServerProcess:
    client = connect(parse_redis_url(tree.redis_url), max_connections=4, pool_timeout_s=5)
    try:
        port = (await client.config_get("port"))["port"]
        assert port is not None
        return next(n for n in tree.redis_nodes if n.port == int(port))
    finally:
        await client.aclose()


async def kill_mid_stream(
    name: str,
    d: Deployment,
    kill: Callable[[], None],
    restart: Callable[[], Any],
    *,
    clients: list[httpx.AsyncClient] | None = None,
    also_allowed: tuple[str, ...] = (),
    restart_first: bool = False,
    restored_by: str | None = None,
) -> None:
    """Two boards under load; ``kill`` a part mid-stream, and once the service answers
    again ``restart`` it (as the supervisor would: a Redis node rejoins as a replica), or
    at once with ``restart_first``; check the ledgers afterwards.
    The boards' writers go through ``clients`` (one each, else both through ``d``)."""
    boards = [d.board, await second_board(d)]
    ledgers = [Ledger(), Ledger()]
    http = clients or [d.http, d.http]
    stop = asyncio.Event()
    loads = [
        asyncio.create_task(stream(http[i], b, ledgers[i], seconds=40, stop=stop, workers=3))
        for i, b in enumerate(boards)
    ]
    served_again: float | None = None
    try:
        for ledger in ledgers:
            await wait_acked(ledger, 300, within_s=10)
        killed_at = time.monotonic()
        await asyncio.to_thread(kill)
        if restart_first:
            await asyncio.sleep(0.5)
            await restart()
        while time.monotonic() - killed_at < SERVES_AGAIN_WITHIN_S + 5:
            after = [s.t1 for ledger in ledgers for s in ledger.acked.values() if s.t0 > killed_at]
            if len(after) >= 20 and all(
                any(s.t0 > killed_at for s in ledger.acked.values()) for ledger in ledgers
            ):
                served_again = (
                    max(
                        min(s.t1 for s in ledger.acked.values() if s.t0 > killed_at)
                        for ledger in ledgers
                    )
                    - killed_at
                )
                break
            await asyncio.sleep(0.2)
        if not restart_first:  # it comes back after the failover, as a replica
            await restart()
        await asyncio.sleep(2)
    finally:
        stop.set()
        await asyncio.gather(*loads)
    print(f"\n[{name}] failover: first 2xx on every board {served_again}s after the kill")
    restored = None
    with contextlib.suppress(httpx.HTTPError, ValueError):  # how Redis was restored, if it was
        restored = (await d.http.get("/readyz", timeout=5)).json().get("redis_restored")
        print(f"[{name}] /readyz redis_restored: {restored!r}")
    failures: list[str] = []
    if restored_by is not None and not str(restored).startswith(restored_by):
        failures.append(f"Redis restored by {restored!r}, not a {restored_by!r}")
    if served_again is None or served_again > SERVES_AGAIN_WITHIN_S:
        failures.append(f"not serving again within {SERVES_AGAIN_WITHIN_S}s: {served_again}")
    for board, ledger in zip(boards, ledgers, strict=True):
        allowed = ("2", "503", *also_allowed)
        odd = {k: v for k, v in ledger.outcomes.items() if not k.startswith(allowed)}
        if odd:
            failures.append(f"{board}: answers other than 2xx/503: {odd}")
        logged, log_failures = await read_log(name, d.servers.nats_url, ledger)
        verdict, settled_s = await settle(d.http, board, ledger, 30, (), logged)
        failures += log_failures + verdict_failures(name, ledger, verdict, settled_s)
    assert not failures, "\n".join(failures)


def restarting(server: ServerProcess) -> Callable[[], Any]:
    async def restart() -> None:
        await asyncio.to_thread(server.start)

    return restart


async def watch_readiness(
    http: httpx.AsyncClient, seen: list[tuple[float, int]], stop: asyncio.Event
) -> None:
    """(time, /readyz status) every 0.1 s until ``stop``; 0 for no answer."""
    while not stop.is_set():
        try:
            status = (await http.get("/readyz", timeout=2)).status_code
        except httpx.HTTPError:
            status = 0
        seen.append((time.monotonic(), status))
        await asyncio.sleep(0.1)


async def test_cluster_primary_killed_mid_stream_loses_no_acknowledged_run(
    cluster_tree: TopologyServers, tmp_path: Path
) -> None:
    async with serving(cluster_tree, tmp_path) as d:
        victim = await cluster_primary(cluster_tree, f"lb:{{{d.board}:all-time:all-time}}")
        killed: list[float] = []
        seen: list[tuple[float, int]] = []
        stop = asyncio.Event()

        def kill() -> None:
            killed.append(time.monotonic())
            victim.kill()

        watcher = asyncio.create_task(watch_readiness(d.http, seen, stop))
        try:
            await kill_mid_stream(
                "cluster-primary-kill",
                d,
                kill,
                restarting(victim),
                restored_by="tail replay from sequence",  # the promoted replica kept its data
            )
        finally:
            stop.set()
            await watcher
        # readiness is the truth: not ready from the moment writes to the dead primary's
        # slots fail (it used to say 200 for the first seconds while submits got 503)
        after = [(t - killed[0], status) for t, status in seen if t > killed[0]]
        first_503 = next((t for t, status in after if status == 503), None)
        print(f"[cluster-primary-kill] /readyz 503 {first_503}s after the kill")
        assert first_503 is not None and first_503 < 1.5, after[:30]


async def test_nats_node_killed_mid_stream_loses_no_acknowledged_run(
    cluster_tree: TopologyServers, tmp_path: Path
) -> None:
    async with serving(cluster_tree, tmp_path) as d:
        victim = cluster_tree.nats_nodes[0]
        await kill_mid_stream("nats-node-kill", d, victim.kill, restarting(victim))


async def test_one_of_two_instances_killed_mid_stream_loses_no_acknowledged_run(
    cluster_tree: TopologyServers, tmp_path: Path
) -> None:
    """Two `rankd serve` on the same servers share the log consumer; one is killed while
    both take runs (a board each) and started again; every logged run gets applied."""
    async with (
        serving(cluster_tree, tmp_path / "a") as d,
        serving(cluster_tree, tmp_path / "b") as other,
    ):
        await kill_mid_stream(
            "instance-kill",
            d,
            other.kill_service,
            other.start_service,
            clients=[d.http, other.http],
            # the killed instance's own requests: refused or cut off, never acknowledged
            also_allowed=("connect-refused", "ReadError", "RemoteProtocolError"),
            restart_first=True,
        )


async def test_sentinel_primary_killed_mid_stream_loses_no_acknowledged_run(
    sentinel_tree: TopologyServers, tmp_path: Path
) -> None:
    async with serving(sentinel_tree, tmp_path) as d:
        victim = await sentinel_primary(sentinel_tree)
        await kill_mid_stream(
            "sentinel-primary-kill",
            d,
            victim.kill,
            restarting(victim),
            restored_by="tail replay from sequence",  # the promoted replica kept its data
        )
