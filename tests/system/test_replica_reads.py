"""RANKD_REDIS_READ_FROM_REPLICAS on a Sentinel group: the read paths' plain reads of boards
and names go to the replica; script calls, pipelines and everything the restart machinery
reads stay on the primary; with the replica gone, the reads fall back to the primary.

One embedded ``sentinel`` tree for the module (a primary, its replica, three Sentinels);
which node served what is read from each node's INFO commandstats.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as sync_redis

from rankd.embedded.topology import TopologyServers, start_topology
from rankd.periods import PeriodRef
from rankd.stores.redis import keys
from rankd.stores.redis.replicas import NAMES_KEY, ReplicaReads, replica_may_answer
from rankd.stores.redis.stores import RedisStores

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def sentinel_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TopologyServers]:
    tree = start_topology(Path(tmp_path_factory.mktemp("sentinel")) / "data", "sentinel")
    yield tree
    tree.stop()


def node(port: int) -> sync_redis.Redis:
    return sync_redis.Redis(port=port, socket_timeout=5, decode_responses=True)


def roles(tree: TopologyServers) -> tuple[int, int]:
    """(primary port, replica port)."""
    # redis-py leaves execute_command unannotated
    by_role = {
        str(node(n.port).execute_command("ROLE")[0]): n.port  # type: ignore[no-untyped-call]
        for n in tree.redis_nodes
    }
    return by_role["master"], by_role["slave"]


def calls(port: int) -> dict[str, int]:
    stats: dict[str, Any] = node(port).info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def reset(*ports: int) -> None:
    for port in ports:
        node(port).config_resetstat()


def test_only_the_board_and_name_reads_are_replica_reads() -> None:
    assert NAMES_KEY == keys.NAMES
    board = keys.period_keys("b", "all-time", "all-time").public
    assert replica_may_answer(("HMGET", keys.NAMES, "p1"))
    assert replica_may_answer(("ZREVRANGE", board, 0, 9))
    assert replica_may_answer(("zcard", board.encode()))
    assert replica_may_answer(("ZRANGE", keys.periods_index("b", "daily"), 0, -1))
    assert not replica_may_answer(("HMGET", keys.PROFILE_SEGMENTS, "p1"))  # a submit reads it
    assert not replica_may_answer(("HMGET", keys.LOG_POSITION, "seq", "at_ms"))
    assert not replica_may_answer(("GET", keys.VERIFIED_MARKER))
    assert not replica_may_answer(("EXISTS", board))
    assert not replica_may_answer(("ZSCAN", board, 0))
    assert not replica_may_answer(("EVALSHA", "0" * 40, 1, board))
    assert not replica_may_answer(("HSET", keys.NAMES, "p1", "Ann"))


async def test_sentinel_reads_go_to_the_replica_scripts_to_the_primary(
    sentinel_tree: TopologyServers,
) -> None:
    primary, replica = roles(sentinel_tree)
    store = RedisStores(sentinel_tree.redis_url, read_from_replicas=True, batch_in_flight=0)
    plain = RedisStores(sentinel_tree.redis_url, batch_in_flight=0)
    try:
        await store.open()
        assert isinstance(store.client, ReplicaReads)
        assert not isinstance(plain.client, ReplicaReads)
        await store.profiles.set_name("p1", "Ann")
        ref = PeriodRef("replica-reads", "all-time", "all-time", "")
        await store.client.zadd(keys.period_keys(*ref).public, {"p1|0": 5})
        await store.client.zadd(keys.periods_index(ref.board, ref.window), {ref.period: 0})
        assert await store.client.wait(1, 5000) == 1  # the replica has every write so far
        reset(primary, replica)

        assert await store.profiles.names(["p1", "p2"]) == ["Ann", None]
        assert await store.index.period_ids(ref.board, ref.window) == [ref.period]
        await store.reads.entry(ref, "p1")  # a script call
        await store.profiles.profile_segments(["p1"])  # read by submits: the primary's copy
        await store.positions.is_verified()
        on_primary, on_replica = calls(primary), calls(replica)
        assert on_replica.get("hmget") == 1 and on_replica.get("zrange") == 1
        assert "evalsha" not in on_replica and "get" not in on_replica
        assert on_primary.get("evalsha") == 1 and on_primary.get("hmget") == 1
        assert on_primary.get("get") == 1 and "zrange" not in on_primary

        reset(primary, replica)
        assert await plain.profiles.names(["p1"]) == ["Ann"]  # without the setting: the primary
        assert calls(primary).get("hmget") == 1 and "hmget" not in calls(replica)
    finally:
        await store.close()
        await plain.close()


async def test_with_the_replica_gone_reads_fall_back_to_the_primary(
    sentinel_tree: TopologyServers,
) -> None:
    primary, replica = roles(sentinel_tree)
    victim = next(n for n in sentinel_tree.redis_nodes if n.port == replica)
    store = RedisStores(sentinel_tree.redis_url, read_from_replicas=True, batch_in_flight=0)
    try:
        await store.open()
        await store.profiles.set_name("p9", "Bo")
        assert await store.client.wait(1, 5000) == 1
        assert await store.profiles.names(["p9"]) == ["Bo"]
        await asyncio.to_thread(victim.kill)
        reset(primary)
        # the connection to the dead replica fails once at most; then the replica pool
        # tries the replicas the Sentinels name and falls back to the primary
        answers: list[Any] = []
        for _ in range(20):
            try:
                answers.append(await store.profiles.names(["p9"]))
                break
            except Exception as exc:  # counted: at most one expected
                answers.append(exc)
                await asyncio.sleep(0.2)
        assert answers[-1] == ["Bo"], answers
        assert len(answers) <= 2, answers
        assert calls(primary).get("hmget", 0) >= 1
    finally:
        await store.close()
        await asyncio.to_thread(victim.start)
