"""INFO of every primary, one dict per node, whatever the mode."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster


async def primaries_info(client: Redis | RedisCluster, section: str) -> list[dict[str, Any]]:
    """``INFO section`` of each primary: the one server, Sentinel's primary, or every cluster
    primary (INFO without target nodes answers for one node only)."""
    if not isinstance(client, RedisCluster):
        return [await client.info(section)]
    got = await client.info(section, target_nodes=RedisCluster.PRIMARIES)
    # by node name; a cluster of one primary gets that primary's reply itself
    if got and all(isinstance(v, dict) for v in got.values()):
        return list(got.values())
    return [got]
