"""INFO of every primary (stores/redis/node_info.py) on a cluster of one primary, where
redis-py hands back that node's reply itself rather than a dict by node: the memory watch,
a resharding's room check and Redis's identity read it alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.asyncio.cluster import RedisCluster

from rankd.embedded.lifecycle import start_all, stop_all
from rankd.embedded.ports import HOST, free_port
from rankd.embedded.topology import cluster_nodes, form_cluster
from rankd.stores.redis.connection import identity
from rankd.stores.redis.node_info import primaries_info


@pytest.fixture
def one_primary(tmp_path: Path) -> Iterator[int]:
    port = free_port()
    nodes = cluster_nodes(tmp_path, [port])
    start_all(nodes)
    try:
        form_cluster([port], primaries=1)
        yield port
    finally:
        stop_all(nodes)


async def test_a_cluster_of_one_primary_is_read_as_one_node(one_primary: int) -> None:
    client = RedisCluster(host=HOST, port=one_primary)
    try:
        memory = await primaries_info(client, "memory")
        assert len(memory) == 1 and int(memory[0]["used_memory"]) > 0, memory
        server = await primaries_info(client, "server")
        assert await identity(client) == str(server[0]["run_id"])
    finally:
        await client.aclose()
