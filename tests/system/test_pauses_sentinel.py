"""A pause on the Sentinel topology (tests/system/test_pauses.py has the single and cluster
ones, and what each checks): the Redis primary is SIGSTOPped under load long enough for the
Sentinels to promote its replica (down-after 1 s), then SIGCONTed; nothing acknowledged is
lost, Redis and PostgreSQL agree, and the old primary comes back as a replica."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rankd.embedded.topology import TopologyServers, start_topology
from tests.system.test_pauses import (
    PAUSE_S,
    Scene,
    _is,
    judge,
    pause_under_load,
    process_tree,
    role,
    until,
)
from tests.system.test_topology_failures import sentinel_primary, serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def sentinel_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TopologyServers]:
    tree = start_topology(Path(tmp_path_factory.mktemp("pauses")) / "data", "sentinel")
    yield tree
    tree.stop()


async def test_a_paused_sentinel_primary_is_replaced_and_loses_no_acknowledged_run(
    sentinel_tree: TopologyServers, tmp_path: Path
) -> None:
    name = "pause-sentinel-primary"
    began = time.monotonic()
    async with serving(sentinel_tree, tmp_path) as d:
        victim = await sentinel_primary(sentinel_tree)
        assert victim.pid is not None
        replica = next(n for n in sentinel_tree.redis_nodes if n.port != victim.port)
        scene = Scene(d.http, d.board, sentinel_tree.postgres_url, sentinel_tree.nats_url)

        async def promoted() -> None:
            took = await until(lambda: _is(role(replica.port), b"master"), PAUSE_S - 0.5)
            print(f"\n[{name}] replica {replica.port} promoted {took}s into the pause")
            if took is None:
                scene.notes.append(f"replica not promoted within {PAUSE_S - 0.5}s of the pause")

        await pause_under_load(scene, process_tree(victim.pid), promoted)
        rejoined = await until(lambda: _is(role(victim.port), b"slave"), 30)
        print(f"[{name}] old primary {victim.port} a replica {rejoined}s after the resume")
        if rejoined is None:
            scene.notes.append(f"old primary {victim.port} did not rejoin as a replica")
        await judge(name, scene)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")
