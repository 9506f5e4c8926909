"""Failover time: from a SIGKILL to steady 2xx again, on the embedded cluster topologies.

For each case a fresh tree is started (``cluster``: six Redis Cluster nodes, three
clustered NATS servers, one PostgreSQL; ``sentinel``: a Redis primary, its replica and three
Sentinels with the same NATS), one `rankd serve` on it, and ``--writers`` closed-loop
clients submit single runs to one board (two windows). After ``--warmup`` s the part is
killed; we report the seconds until the first 2xx of a run sent after the kill and until
"steady" (the first 2xx followed by a full second of nothing but 2xx), and what the clients
saw meanwhile (only 503s are expected).

Cases: the Redis primary holding the board (cluster), the Sentinel group's primary, the
NATS node leading the run stream and one that does not (cluster).

    python -m bench.failover [--writers 8] [--warmup 5] [--after 15] [--cases ...]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import itertools
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import nats

from bench.common import SERVER_H, create_board, service, write_result
from rankd.embedded.process import ServerProcess
from rankd.embedded.topology import TopologyServers, start_topology
from rankd.settings import Settings
from rankd.stores.redis.connection import connect
from rankd.stores.redis.url import parse_redis_url


@contextlib.contextmanager
def tree(topology: str) -> Iterator[TopologyServers]:
    with tempfile.TemporaryDirectory(prefix="rankd-bench-") as tmp:
        started = start_topology(Path(tmp) / "data", topology)  # type: ignore[arg-type]
        try:
            yield started
        finally:
            started.stop()


async def redis_primary_of(stack: TopologyServers, key: str) -> ServerProcess:
    client = connect(parse_redis_url(stack.redis_url), max_connections=2, pool_timeout_s=5)
    try:
        await client.ping()
        if stack.topology == "cluster":
            port = cast(Any, client).get_node_from_key(key).port
        else:
            port = int(str((await client.config_get("port"))["port"]))
        return next(n for n in stack.redis_nodes if n.port == port)
    finally:
        await client.aclose()


async def nats_leader_of(stack: TopologyServers, leader: bool) -> ServerProcess:
    """The NATS node leading the run stream (``leader``), or one that does not."""
    nc = await nats.connect(servers=stack.nats_url.split(","))
    try:
        info = await nc.jetstream().stream_info(Settings().stream)
    finally:
        await nc.close()
    name = info.cluster.leader if info.cluster is not None else None
    nodes = [n for n in stack.nats_nodes if (f"rankd_n{n.index}" == name) == leader]
    return nodes[0]


async def load_and_kill(
    port: int, board: str, victim: ServerProcess, writers: int, warmup: float, after: float
) -> dict[str, Any]:
    answers: list[tuple[float, float, int]] = []  # (sent, answered, status; 0: no answer)
    stop = time.monotonic() + warmup + after
    numbers = itertools.count()

    async def writer(http: httpx.AsyncClient) -> None:
        while time.monotonic() < stop:
            n = next(numbers)
            body = {"run_id": f"r{n}-{uuid.uuid4().hex[:8]}", "player_id": f"p{n % 5000}"}
            body["score"] = n % 100_000  # type: ignore[assignment]
            sent = time.monotonic()
            try:
                r = await http.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
                status = r.status_code
            except httpx.TransportError:
                status = 0
            answers.append((sent, time.monotonic(), status))
            if status != 200:
                await asyncio.sleep(0.02)

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=15) as http:
        tasks = [asyncio.create_task(writer(http)) for _ in range(writers)]
        await asyncio.sleep(warmup)
        killed = time.monotonic()
        await asyncio.to_thread(victim.kill)
        await asyncio.gather(*tasks)
    after_kill = sorted((a for a in answers if a[0] > killed), key=lambda a: a[1])
    first = next((a[1] - killed for a in after_kill if a[2] == 200), None)
    steady = None
    for i, (_, answered, status) in enumerate(after_kill):
        if status != 200:
            continue
        window = [a for a in after_kill[i:] if a[1] <= answered + 1.0]
        if window and all(a[2] == 200 for a in window) and after_kill[-1][1] > answered + 1.0:
            steady = answered - killed
            break
    during = collections.Counter(
        a[2] for a in after_kill if steady is None or a[1] - killed <= steady
    )
    before = [a for a in answers if a[1] < killed]
    return {
        "first_2xx_s": None if first is None else round(first, 2),
        "steady_2xx_s": None if steady is None else round(steady, 2),
        "statuses_until_steady": {str(k): v for k, v in sorted(during.items())},
        "submits_per_s_before": round(len(before) / warmup, 1),
    }


def case(
    name: str,
    topology: str,
    pick: Callable[[TopologyServers, str], ServerProcess | None],
    args: argparse.Namespace,
) -> dict[str, Any]:
    with (
        tree(topology) as stack,
        service(cast(Any, stack), extra_env={"RANKD_STREAM_REPLICAS": "3"}) as port,
    ):
        board = f"failover-{uuid.uuid4().hex[:8]}"
        create_board(port, board, windows=["all-time", "daily"])
        victim = pick(stack, board) or asyncio.run(
            redis_primary_of(stack, f"lb:{{{board}:all-time:all-time}}")
        )
        result = asyncio.run(
            load_and_kill(port, board, victim, args.writers, args.warmup, args.after)
        )
    print(f"{name}: {result}")
    return result


CASES: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "redis_cluster_primary": lambda a: case("redis cluster primary", "cluster", _primary, a),
    "redis_sentinel_primary": lambda a: case("sentinel primary", "sentinel", _primary, a),
    # the stream's leader and a follower: a leader's loss waits for a new election
    "nats_leader": lambda a: case("nats stream leader", "cluster", _nats(leader=True), a),
    "nats_follower": lambda a: case("nats follower", "cluster", _nats(leader=False), a),
}


def _primary(_stack: TopologyServers, _board: str) -> None:
    return None  # case() finds the Redis primary holding the board


def _nats(*, leader: bool) -> Callable[[TopologyServers, str], ServerProcess]:
    return lambda stack, _board: asyncio.run(nats_leader_of(stack, leader))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--after", type=float, default=15.0)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    args = parser.parse_args()
    results = {name: CASES[name](args) for name in args.cases}
    write_result("failover", {"args": vars(args), "results": results})


if __name__ == "__main__":
    main()
