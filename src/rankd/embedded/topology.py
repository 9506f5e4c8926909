"""The embedded servers past one machine's shape: a Redis Cluster or a Sentinel group, and
a three-node JetStream cluster, all on loopback under one data dir.

``cluster``: six cluster-enabled redis-servers (three primaries, a replica each), joined with
CLUSTER MEET / ADDSLOTS / REPLICATE (no extra tool); ``sentinel``: a primary, its replica and
three Sentinels (``redis-server --sentinel``). Both come with three clustered nats-servers
(the run stream at three replicas) and one PostgreSQL.

The ports are chosen once and kept in ``<data-dir>/topology.json``: a cluster's nodes.conf
and the Sentinels' config name their peers by port, so a restart of the whole tree must
come back on the same ones. That file also records the topology, and a data dir made by one
topology is refused by another (its Redis data would not be where the other looks).

The nodes themselves are in the per-server modules (redis_server.py: RedisNode and
SentinelNode; nats_server.py: NatsNode); this module picks and records their ports, starts
them together and forms the cluster or waits for the Sentinels.

Failover timeouts are short (cluster-node-timeout 2 s, Sentinel down-after 1 s): a killed
primary is replaced in seconds rather than the 15-30 s defaults.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rankd.embedded.lifecycle import start_all, stop_all
from rankd.embedded.nats_server import NatsNode
from rankd.embedded.ports import HOST, pick_ports
from rankd.embedded.postgres_server import PostgresServer
from rankd.embedded.process import EmbeddedServerError, ServerProcess
from rankd.embedded.redis_server import (
    MASTER_NAME,
    RedisNode,
    RedisServer,
    SentinelNode,
    current_primary_port,
)

Topology = Literal["single", "cluster", "sentinel"]
TOPOLOGIES: tuple[Topology, ...] = ("single", "cluster", "sentinel")
MARKER = "topology.json"
CLUSTER_NODE_TIMEOUT_MS = 2000
FORM_TIMEOUT_S = 30.0
SLOTS = 16384


class TopologyMismatch(EmbeddedServerError):
    """The data dir was made by another topology."""


def recorded_topology(data_dir: Path) -> Topology | None:
    """The topology a data dir was made with; "single" for one made before topologies
    existed (it has Redis or PostgreSQL data but no marker); None for a new one."""
    marker = data_dir / MARKER
    if marker.exists():
        try:
            found = json.loads(marker.read_text())["topology"]
        except (OSError, ValueError, KeyError, TypeError):
            raise TopologyMismatch(f"{marker} is unreadable; move it away to start anew") from None
        if found in TOPOLOGIES:
            return found  # type: ignore[no-any-return]
        raise TopologyMismatch(f"{marker} names an unknown topology {found!r}")
    if (data_dir / "redis").exists() or (data_dir / "postgres").exists():
        return "single"
    return None


def check_topology(data_dir: Path, wanted: Topology) -> dict[str, Any]:
    """The data dir's recorded ports, after checking it was made with ``wanted``; records
    ``wanted`` in a new data dir."""
    found = recorded_topology(data_dir)
    if found is not None and found != wanted:
        raise TopologyMismatch(
            f"{data_dir} was made with --topology {found}, not {wanted}: start it with "
            f"--topology {found}, or use another data dir"
        )
    marker = data_dir / MARKER
    if marker.exists():
        recorded: dict[str, Any] = json.loads(marker.read_text())
        return recorded
    data_dir.mkdir(parents=True, exist_ok=True)
    recorded = {"topology": wanted}
    marker.write_text(json.dumps(recorded))
    return recorded


def _save(data_dir: Path, recorded: dict[str, Any]) -> None:
    tmp = data_dir / (MARKER + ".tmp")
    tmp.write_text(json.dumps(recorded))
    tmp.replace(data_dir / MARKER)


# ------------------------------------------------------------------------------ the tree


@dataclass
class TopologyServers:
    """Every server of a topology; the same face as EmbeddedServers for the callers."""

    topology: Topology
    redis_nodes: list[RedisServer]
    sentinels: list[SentinelNode]
    nats_nodes: list[NatsNode]
    postgres: PostgresServer | None

    @property
    def redis_url(self) -> str:
        if self.topology == "cluster":
            hosts = ",".join(f"{HOST}:{n.port}" for n in self.redis_nodes)
            return f"redis+cluster://{hosts}"
        hosts = ",".join(f"{HOST}:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{MASTER_NAME}"

    @property
    def nats_url(self) -> str:
        return ",".join(n.url for n in self.nats_nodes)

    @property
    def postgres_url(self) -> str:
        if self.postgres is None:
            raise EmbeddedServerError("embedded PostgreSQL was not started")
        return self.postgres.url

    @property
    def stream_replicas(self) -> int:
        return len(self.nats_nodes)

    @property
    def servers(self) -> list[ServerProcess]:
        out: list[ServerProcess] = [*self.redis_nodes, *self.sentinels, *self.nats_nodes]
        if self.postgres is not None:
            out.append(self.postgres)
        return out

    def stop(self) -> None:
        stop_all(self.servers)

    def __enter__(self) -> TopologyServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def cluster_nodes(data_dir: Path, ports: list[int]) -> list[RedisServer]:
    flags = [
        "--cluster-enabled", "yes",
        "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", str(CLUSTER_NODE_TIMEOUT_MS),
        # a replica takes over however long it was cut off: the log restores what it lacks
        "--cluster-replica-validity-factor", "0",
        # the other primaries keep serving their slots while one shard fails over
        "--cluster-require-full-coverage", "no",
    ]  # fmt: skip
    return [RedisNode(data_dir, p, f"c{i}", flags) for i, p in enumerate(ports)]


def _command(port: int, *args: str | int) -> Any:
    """One command to a node, with a fresh connection (setup only)."""
    import redis

    with redis.Redis(HOST, port, socket_timeout=5, decode_responses=True) as client:
        return client.execute_command(*args)


def _wait(what: str, check: Any, timeout: float = FORM_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.1)
    raise EmbeddedServerError(f"the embedded Redis Cluster did not {what} within {timeout:.0f} s")


def form_cluster(ports: list[int], primaries: int = 3) -> None:
    """Join the nodes into a cluster, unless their nodes.conf says they already are: slots
    split evenly over the first ``primaries`` nodes, one replica each from the rest."""

    def state_ok() -> bool:
        return all("cluster_state:ok" in _command(p, "CLUSTER", "INFO") for p in ports)

    def known(port: int) -> int:
        return len(str(_command(port, "CLUSTER", "NODES")).strip().splitlines())

    assigned = _command(ports[0], "CLUSTER", "INFO")
    if "cluster_slots_assigned:0" not in assigned:
        _wait("come back together", state_ok)
        return
    for port in ports[1:]:
        _command(ports[0], "CLUSTER", "MEET", HOST, port)
    _wait("meet", lambda: all(known(p) == len(ports) for p in ports))
    per = SLOTS // primaries
    for i in range(primaries):
        first, last = i * per, (SLOTS - 1 if i == primaries - 1 else (i + 1) * per - 1)
        _command(ports[i], "CLUSTER", "ADDSLOTS", *range(first, last + 1))
    ids = [str(_command(p, "CLUSTER", "MYID")) for p in ports[:primaries]]
    for j, port in enumerate(ports[primaries:]):
        target = ids[j % primaries]
        # the replica must have heard of its primary as a primary with slots first
        _wait(
            "see its primaries",
            lambda port=port, target=target: any(
                line.startswith(target) and "master" in line
                for line in str(_command(port, "CLUSTER", "NODES")).splitlines()
            ),
        )
        _command(port, "CLUSTER", "REPLICATE", target)
    _wait("reach state ok", state_ok)


def watch_ready(ports: list[int], replicas: int = 1) -> None:
    """Wait until every Sentinel knows the replica and its peers: one that has not heard of
    the replica yet (they learn it from the primary's INFO, every 10 s) would find "no good
    replica" and put the failover off for a while."""

    def knows(port: int) -> bool:
        found = _command(port, "SENTINEL", "REPLICAS", MASTER_NAME)
        peers = _command(port, "SENTINEL", "SENTINELS", MASTER_NAME)
        return len(found) >= replicas and len(peers) >= len(ports) - 1

    deadline = time.monotonic() + FORM_TIMEOUT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if all(knows(p) for p in ports):
                return
        time.sleep(0.2)
    raise EmbeddedServerError(
        "the embedded Sentinels did not see the replica and each other "
        f"within {FORM_TIMEOUT_S:.0f} s"
    )


def start_topology(data_dir: Path, topology: Topology) -> TopologyServers:
    """Start a ``cluster`` or ``sentinel`` tree under ``data_dir`` and wait until it serves.

    On any failure whatever started is stopped and the error raised; a data dir made with
    another topology raises TopologyMismatch before anything starts."""
    data_dir = Path(data_dir).absolute()
    recorded = check_topology(data_dir, topology)
    if "nats" not in recorded:
        taken: set[int] = set()
        if topology == "cluster":
            recorded["redis"] = pick_ports(6, taken, bus=True)
        else:
            recorded["redis"] = pick_ports(2, taken)
            recorded["sentinel"] = pick_ports(3, taken)
        recorded["nats"] = pick_ports(3, taken)
        recorded["nats_monitor"] = pick_ports(3, taken)
        recorded["nats_routes"] = pick_ports(3, taken)
        _save(data_dir, recorded)
    nats = [
        NatsNode(data_dir, i, p, recorded["nats_monitor"][i], recorded["nats_routes"])
        for i, p in enumerate(recorded["nats"])
    ]
    sentinels: list[SentinelNode] = []
    if topology == "cluster":
        redis_nodes = cluster_nodes(data_dir, recorded["redis"])
    else:
        ports = recorded["redis"]
        configs = [data_dir / "redis" / f"s{i}" / "sentinel.conf" for i in range(3)]
        named = [current_primary_port(c) for c in configs]
        primary: int = next((p for p in named if p is not None and p in ports), ports[0])
        replica = next(p for p in ports if p != primary)
        redis_nodes = [
            RedisNode(data_dir, primary, f"r{ports.index(primary)}", []),
            RedisNode(
                data_dir, replica, f"r{ports.index(replica)}", ["--replicaof", HOST, str(primary)]
            ),
        ]
        sentinels = [
            SentinelNode(data_dir, p, f"s{i}", primary) for i, p in enumerate(recorded["sentinel"])
        ]
    tree = TopologyServers(topology, redis_nodes, sentinels, nats, PostgresServer(data_dir))
    try:
        todo = [*redis_nodes, *nats, *([tree.postgres] if tree.postgres else [])]
        start_all(todo)
        if topology == "cluster":
            form_cluster([n.port for n in redis_nodes])
        else:
            for sentinel in sentinels:  # after the primary: they ask it for its replicas
                sentinel.start()
            watch_ready([s.port for s in sentinels])
    except BaseException:
        with contextlib.suppress(Exception):
            tree.stop()
        raise
    return tree
