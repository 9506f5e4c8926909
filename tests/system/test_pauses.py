"""Pauses: a server process stopped (SIGSTOP) for longer than the service's timeouts while
runs are submitted, then resumed (SIGCONT), as a GC or VM stall does to a real server.

Each test streams random runs at a `rankd serve` (the ledger of tests/system/test_failures),
polls /readyz all along, pauses one server process (PostgreSQL with every backend), resumes
it, and then checks, with no person doing anything:

* every answer was a 2xx or a 503, each within the client's timeout (no hang);
* /readyz is 200 again within READY_AFTER_RESUME_S of the resume, and at that moment every
  run acknowledged so far is readable;
* every acknowledged run is in the log, on the boards (Redis) and in ``player_best``
  (PostgreSQL), and the two agree on every player of every period.

Each prints one line of figures: ``acked``, ``lost``, the 503s (how many, and the seconds
from the first to the last), the seconds from the resume until /readyz said 200, and the
longest request. On the cluster topology the paused Redis primary's replica is promoted
meanwhile, and the old primary must come back as a replica holding what the new primary
holds; a paused NATS stream leader must be replaced by a new leader.

A Redis paused for longer than the client's timeout (LONG_PAUSE_S) is expected to fail: the
service's Redis clients have no read timeout, so every request waits out the stall.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from redis.asyncio import Redis

from rankd.embedded.process_tree import live_tree
from rankd.embedded.topology import CLUSTER_NODE_TIMEOUT_MS, TopologyServers, start_topology
from rankd.settings import Settings
from tests.support.durable import pg_best_at, wait_consumer_idle
from tests.system.test_failures import (
    Ledger,
    _missing,
    periods_of,
    read_log,
    read_top,
    scores,
    settle,
    stream,
    verdict_failures,
    wait_acked,
)
from tests.system.test_supervision import owned_service, read_whole
from tests.system.test_topology_failures import cluster_primary, serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

# Longer than every timeout of the service: a publish (5 s), a PostgreSQL pool wait (5 s), a
# Redis pool wait (10 s), a /readyz probe (2 s), and a replica's promotion (cluster-node-timeout
# 2 s); shorter than the client's timeout, which LONG_PAUSE_S passes.
PAUSE_S = 12.0
CLIENT_TIMEOUT_S = 15.0  # the timeout of owned_service's and serving's clients
LONG_PAUSE_S = 20.0
READY_AFTER_RESUME_S = 20.0


@dataclass
class Scene:
    """One pause under load: what was sent, what /readyz said, and when."""

    http: httpx.AsyncClient
    board: str
    postgres_url: str
    nats_url: str
    pause_s: float = PAUSE_S
    ledger: Ledger = field(default_factory=Ledger)
    ready: list[tuple[float, int, Any]] = field(default_factory=list)  # (t, status, body)
    paused_at: float = 0.0
    resumed_at: float = 0.0
    ready_at: float | None = None
    missing_at_ready: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # other instances' clients: the load goes to them too (the same board and ledger)
    more_http: list[httpx.AsyncClient] = field(default_factory=list)
    # whether the first /readyz 200 after the fault must find every acknowledged run: not
    # across a partition, where another instance's runs wait on the old primary until it
    # finds the new one and catches up (test_partitions.py); settle() still waits for them
    ready_means_all_readable: bool = True


def process_tree(pid: int) -> list[int]:
    """The process and its live descendants (PostgreSQL's backends), parent first."""
    return [pid, *sorted(live_tree(pid, descendants=True) - {pid})]


def signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids if sig == signal.SIGSTOP else reversed(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


async def poll_ready(scene: Scene, stop: asyncio.Event) -> None:
    """/readyz of every instance the load goes to, as one: 200 once all of them say so (an
    instance that catches up after a partition refuses its own submits until it has)."""
    while not stop.is_set():
        t = time.monotonic()
        status, body = 200, None
        for http in [scene.http, *scene.more_http]:
            try:
                response = await http.get("/readyz", timeout=5)
                said, what = response.status_code, response.json()
            except (httpx.HTTPError, ValueError) as exc:
                said, what = 0, repr(exc)
            if body is None or said != 200:
                body = what
            if status == 200:
                status = said
        scene.ready.append((t, status, body))
        await asyncio.sleep(0.1)


async def pause_under_load(scene: Scene, pids: list[int], during: Any = None) -> None:
    """Load, pause ``pids`` for ``scene.pause_s`` (running ``during()`` meanwhile), resume, and wait
    for /readyz 200 (reading every acknowledged run at that moment); 3 s of load after."""

    async def stop() -> None:
        signal_all(pids, signal.SIGSTOP)

    async def resume() -> None:
        signal_all(pids, signal.SIGCONT)

    await fault_under_load(scene, stop, resume, during)


async def fault_under_load(
    scene: Scene,
    begin: Callable[[], Awaitable[None]],
    end: Callable[[], Awaitable[None]],
    during: Any = None,
) -> None:
    """pause_under_load for any fault: ``begin()`` once runs flow, ``end()`` (always, even
    after a failure) ``scene.pause_s`` later (test_partitions.py cuts and heals a link)."""
    stop = asyncio.Event()
    load = asyncio.gather(
        *(
            stream(http, scene.board, scene.ledger, seconds=120, stop=stop)
            for http in [scene.http, *scene.more_http]
        )
    )
    watch = asyncio.create_task(poll_ready(scene, stop))
    try:
        await wait_acked(scene.ledger, 300, within_s=10)
        scene.paused_at = time.monotonic()
        try:
            await begin()
            if during is not None:
                await during()
            await asyncio.sleep(max(0.0, scene.paused_at + scene.pause_s - time.monotonic()))
        finally:
            await end()
        scene.resumed_at = time.monotonic()
        while time.monotonic() - scene.resumed_at < READY_AFTER_RESUME_S:
            said = [s for t, s, _ in scene.ready if t >= scene.resumed_at]
            if said and said[-1] == 200:
                scene.ready_at = time.monotonic()
                acked = list(scene.ledger.acked.values())
                wps = {wp for run in acked for wp in periods_of(run)}
                boards = {wp: await read_whole(scene.http, scene.board, *wp) for wp in wps}
                scene.missing_at_ready = [r.run_id for r in acked if _missing(r, boards)]
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(3)
    finally:
        stop.set()
        await asyncio.gather(load, watch)


async def judge(name: str, scene: Scene) -> None:
    """The checks of the module docstring; prints the figures, fails on anything wrong."""
    ledger, paused, resumed = scene.ledger, scene.paused_at, scene.resumed_at
    failures = list(scene.notes)
    sent = list(ledger.all_sent())
    longest = max(sent, key=lambda r: r.t1 - r.t0)
    refused = sorted(r.t1 for r in ledger.unavailable.values())
    span = refused[-1] - refused[0] if refused else 0.0
    held = [r for r in ledger.acked.values() if r.t1 - r.t0 >= 1.0]
    answered = sorted(r.t1 for r in ledger.acked.values())
    gap = max((b - a for a, b in itertools.pairwise(answered)), default=0.0)
    not_ready = [t for t, s, _ in scene.ready if paused <= t < resumed and s != 200]
    ready_s = None if scene.ready_at is None else scene.ready_at - resumed
    print(
        f"\n[{name}] paused {resumed - paused:.1f}s: acked {len(ledger.acked)}, 503s "
        f"{len(refused)} over {span:.2f}s ({refused[0] - paused if refused else 0:+.2f}s .. "
        f"{refused[-1] - paused if refused else 0:+.2f}s from the pause), /readyz 200 "
        f"{ready_s if ready_s is None else round(ready_s, 2)}s after the resume (503 from "
        f"{not_ready[0] - paused if not_ready else float('nan'):+.2f}s), longest request "
        f"{longest.t1 - longest.t0:.2f}s (sent {longest.t0 - paused:+.2f}s), 2xx taking 1 s or "
        f"more {len(held)}, longest time without a 2xx {gap:.2f}s; {ledger.summary()}"
    )
    odd = {k: v for k, v in ledger.outcomes.items() if not k.startswith(("2", "503"))}
    if odd:
        failures.append(f"answers other than 2xx or 503 (or none in time): {odd}")
    if longest.t1 - longest.t0 >= CLIENT_TIMEOUT_S:
        failures.append(f"a request took {longest.t1 - longest.t0:.1f}s: {longest}")
    if ready_s is None:
        failures.append(f"/readyz not 200 within {READY_AFTER_RESUME_S}s: {scene.ready[-1:]}")
    if scene.missing_at_ready and scene.ready_means_all_readable:
        failures.append(
            f"/readyz 200 while acked runs were unreadable: {scene.missing_at_ready[:3]}"
        )
    if scene.ready_at is not None:
        late = [r for r in ledger.maybe() if r.t0 >= scene.ready_at]
        if late:
            failures.append(f"{len(late)} submits failed after /readyz said 200: {late[:3]}")

    logged, log_failures = await read_log(name, scene.nats_url, ledger)
    verdict, settled_s = await settle(scene.http, scene.board, ledger, 30, (), logged)
    failures += log_failures + verdict_failures(name, ledger, verdict, settled_s)
    try:
        await wait_consumer_idle(scene.http, within_s=30)
    except AssertionError as exc:
        failures.append(str(exc))
    wps = sorted({wp for run in sent for wp in periods_of(run)})
    on_redis = {wp: scores(await read_top(scene.http, scene.board, *wp)) for wp in wps}
    best = await pg_best_at(scene.postgres_url, scene.board)
    in_pg: dict[tuple[str, str], dict[str, int]] = {wp: {} for wp in wps}
    for (window, period, player), row in best.items():
        in_pg.setdefault((window, period), {})[player] = int(row[1])
    not_in_pg = [r.run_id for r in ledger.acked.values() if _missing(r, in_pg)]
    differ = [
        (wp, p, in_pg[wp].get(p), on_redis[wp].get(p))
        for wp in wps
        for p in sorted(set(in_pg[wp]) | set(on_redis[wp]))
        if in_pg[wp].get(p) != on_redis[wp].get(p)
    ]
    print(
        f"[{name}] lost {len(verdict.lost)} of {len(ledger.acked)} acked; not in player_best "
        f"{len(not_in_pg)}; player_best vs Redis: {len(differ)} of "
        f"{sum(len(b) for b in on_redis.values())} entries differ"
    )
    if not_in_pg:
        failures.append(f"{len(not_in_pg)} acked runs not in player_best: {not_in_pg[:3]}")
    if differ:
        failures.append(f"player_best != Redis (period, player, pg, redis): {differ[:5]}")
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------- single


async def pause_single(server_dir: Path, server: str, pause_s: float = PAUSE_S) -> None:
    name = f"pause-{server}-{pause_s:.0f}s"
    began = time.monotonic()
    async with owned_service(server_dir) as s:
        urls = s.urls
        scene = Scene(s.http, s.board, urls["postgres_url"], urls["nats_url"], pause_s)
        pids = process_tree(s.server_pid(server))
        await pause_under_load(scene, pids)
        await judge(name, scene)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


async def test_redis_paused_under_load_loses_no_acknowledged_run(server_dir: Path) -> None:
    await pause_single(server_dir, "redis")


async def test_redis_paused_longer_than_the_clients_timeout_answers_503_in_time(
    server_dir: Path,
) -> None:
    await pause_single(server_dir, "redis", LONG_PAUSE_S)


async def test_nats_paused_under_load_loses_no_acknowledged_run(server_dir: Path) -> None:
    await pause_single(server_dir, "nats")


async def test_postgres_paused_under_load_loses_no_acknowledged_run(server_dir: Path) -> None:
    await pause_single(server_dir, "postgres")


# --------------------------------------------------------------------------- cluster


@pytest.fixture(scope="module")
def cluster_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TopologyServers]:
    tree = start_topology(Path(tmp_path_factory.mktemp("pauses")) / "data", "cluster")
    yield tree
    tree.stop()


async def role(port: int) -> list[Any]:
    client = Redis(port=port, socket_timeout=2)
    try:
        return list(await client.role())
    finally:
        await client.aclose()


async def board_on(port: int, key: str) -> list[Any]:
    client = Redis(port=port, socket_timeout=5)
    try:
        await client.readonly()
        return list(await client.zrange(key, 0, -1, withscores=True))
    finally:
        await client.aclose()


async def until(check: Any, within_s: float) -> float | None:
    """Seconds until ``await check()`` is true, or None after ``within_s``."""
    started = time.monotonic()
    while time.monotonic() - started < within_s:
        with contextlib.suppress(Exception):
            if await check():
                return time.monotonic() - started
        await asyncio.sleep(0.1)
    return None


async def test_cluster_primary_paused_is_replaced_and_rejoins_as_a_replica(
    cluster_tree: TopologyServers, tmp_path: Path
) -> None:
    name = "pause-cluster-primary"
    began = time.monotonic()
    async with serving(cluster_tree, tmp_path) as d:
        key = f"lb:{{{d.board}:all-time:all-time}}"
        victim = await cluster_primary(cluster_tree, key)
        assert victim.pid is not None
        replica = [
            n.port
            for n in cluster_tree.redis_nodes
            if n.port != victim.port
            and (r := await role(n.port))[0] == b"slave"
            and int(r[2]) == victim.port
        ]
        assert len(replica) == 1, replica
        scene = Scene(d.http, d.board, cluster_tree.postgres_url, cluster_tree.nats_url)

        async def promoted() -> None:
            took = await until(lambda: _is(role(replica[0]), b"master"), PAUSE_S - 0.5)
            print(f"\n[{name}] replica {replica[0]} promoted {took}s into the pause")
            if took is None:
                scene.notes.append(f"replica not promoted within {PAUSE_S - 0.5}s of the pause")

        await pause_under_load(scene, process_tree(victim.pid), promoted)
        rejoined = await until(lambda: _is(role(victim.port), b"slave"), 20)
        new_primary = await cluster_primary(cluster_tree, key)
        print(
            f"[{name}] node-timeout {CLUSTER_NODE_TIMEOUT_MS} ms; old primary {victim.port} a "
            f"replica {rejoined}s after the resume; the board's primary is {new_primary.port}"
        )
        if rejoined is None or new_primary.port == victim.port:
            scene.notes.append(f"old primary {victim.port} did not rejoin as a replica")
        await judge(name, scene)
        on_new = await board_on(new_primary.port, key)
        same = await until(lambda: _equal(board_on(victim.port, key), on_new), 10)
        print(f"[{name}] old primary holds the new primary's {len(on_new)} entries: {same}s")
        assert same is not None, "the old primary holds writes the new primary lacks"
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


async def _is(found: Any, first: bytes) -> bool:
    return bool((await found)[0] == first)


async def _equal(found: Any, expected: list[Any]) -> bool:
    return bool(await found == expected)


async def stream_leader(nats_url: str) -> str | None:
    nc = await nats.connect(servers=nats_url.split(","), connect_timeout=2, allow_reconnect=False)
    try:
        info = await nc.jetstream(timeout=2).stream_info(Settings().stream)
        return None if info.cluster is None else info.cluster.leader
    finally:
        await nc.close()


async def test_nats_stream_leader_paused_is_replaced(
    cluster_tree: TopologyServers, tmp_path: Path
) -> None:
    name = "pause-nats-leader"
    began = time.monotonic()
    async with serving(cluster_tree, tmp_path) as d:
        leader = await stream_leader(cluster_tree.nats_url)
        victim = next(n for n in cluster_tree.nats_nodes if f"rankd_n{n.index}" == leader)
        assert victim.pid is not None
        others = ",".join(n.url for n in cluster_tree.nats_nodes if n is not victim)
        holds = await asyncio.to_thread(service_connections, victim.monitor_url)
        scene = Scene(d.http, d.board, cluster_tree.postgres_url, cluster_tree.nats_url)

        async def elected() -> None:
            took = await until(
                lambda: _differs(stream_leader(others), (None, leader)), PAUSE_S - 0.5
            )
            print(
                f"\n[{name}] leader {leader} paused (holding {holds} of the service's "
                f"connections); a new leader {took}s into the pause"
            )
            if took is None:
                scene.notes.append(f"no new stream leader within {PAUSE_S - 0.5}s")

        await pause_under_load(scene, process_tree(victim.pid), elected)
        print(f"[{name}] leader after the resume: {await stream_leader(cluster_tree.nats_url)}")
        await judge(name, scene)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


def service_connections(monitor_url: str) -> int:
    with urllib.request.urlopen(f"{monitor_url}/connz?limit=1000", timeout=2) as answer:
        return sum(c.get("name") == "rankd" for c in json.load(answer).get("connections", []))


async def _differs(found: Any, old: tuple[str | None, ...]) -> bool:
    return await found not in old
