"""RANKD_REDIS_URL's forms, and each way of getting them or a topology wrong: one line at
start, a non-zero exit, nothing started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rankd.embedded import free_port
from rankd.embedded.topology import check_topology
from rankd.stores.redis.connection import connect
from rankd.stores.redis.url import BadRedisUrl, parse_redis_url
from tests.system.test_cli import assert_refused, cli_env


@pytest.mark.parametrize(
    ("url", "mode", "tls", "hosts", "master", "db"),
    [
        ("redis://127.0.0.1:6379/0", "single", False, [("127.0.0.1", 6379)], "", 0),
        ("rediss://u:p@cache.internal:6380/2", "single", True, [("cache.internal", 6380)], "", 2),
        (
            "redis+cluster://10.0.0.1:7000,10.0.0.2:7000",
            "cluster",
            False,
            [("10.0.0.1", 7000), ("10.0.0.2", 7000)],
            "",
            0,
        ),
        ("rediss+cluster://:secret@h:7000", "cluster", True, [("h", 7000)], "", 0),
        (
            "redis+sentinel://s1:26379,s2:26379,s3:26379/rankd",
            "sentinel",
            False,
            [("s1", 26379), ("s2", 26379), ("s3", 26379)],
            "rankd",
            0,
        ),
        ("rediss+sentinel://s1:26379/main/3", "sentinel", True, [("s1", 26379)], "main", 3),
    ],
)
def test_each_url_form_is_understood(
    url: str, mode: str, tls: bool, hosts: list[tuple[str, int]], master: str, db: int
) -> None:
    target = parse_redis_url(url)
    assert (target.mode, target.tls, list(target.hosts), target.master, target.db) == (
        mode,
        tls,
        hosts,
        master,
        db,
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("localhost:6379", "must start with"),
        ("http://localhost:6379", "must start with"),
        ("redis://", "no host"),
        ("redis://a:1,b:2", "takes one host"),
        ("redis://localhost:notaport", "not host:port"),
        ("redis://localhost:70000", "not host:port"),
        ("redis+cluster://a:1,b", "not host:port"),
        ("redis+cluster://a:1/0", "only database 0"),
        ("redis+sentinel://a:26379", "names no master"),
        ("redis+sentinel://a:26379/m/x", "not a database number"),
        ("redis://a:1/zero", "not a database number"),
    ],
)
def test_a_malformed_url_is_one_line_naming_the_problem(url: str, says: str) -> None:
    with pytest.raises(BadRedisUrl) as raised:
        parse_redis_url(url)
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_the_password_never_shows_in_the_message() -> None:
    with pytest.raises(BadRedisUrl) as raised:
        parse_redis_url("redis+sentinel://user:hunter2@a:26379")
    assert "hunter2" not in str(raised.value)


def serve(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rankd.cli", "serve", "--port", str(free_port()), *args],
        env=cli_env() | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def external(
    redis: str = "redis://127.0.0.1:1/0", nats: str = "nats://127.0.0.1:1"
) -> dict[str, str]:
    return {
        "RANKD_REDIS_URL": redis,
        "RANKD_POSTGRES_URL": "postgresql://nobody@127.0.0.1:1/rankd",
        "RANKD_NATS_URL": nats,
    }


@pytest.mark.parametrize(
    ("env", "says"),
    [
        (external(redis="redis+cluster://"), "RANKD_REDIS_URL"),
        (external(redis="redis+sentinel://127.0.0.1:26379"), "names no master"),
        (external(redis="memcached://x:1"), "must start with"),
        (external(nats="nats://a:1,http://b:2"), "RANKD_NATS_URL"),
        (external(nats="nats://a:port"), "RANKD_NATS_URL"),
    ],
)
def test_serve_refuses_a_malformed_url_in_one_line(env: dict[str, str], says: str) -> None:
    assert_refused(serve(env), says)


def test_serve_refuses_a_cluster_whose_seed_is_unreachable() -> None:
    """A cluster with its node missing at start: one line naming the unreachable Redis."""
    port = free_port()
    result = serve(external(redis=f"redis+cluster://127.0.0.1:{port}"))
    assert_refused(result, "RANKD_REDIS_URL: cannot connect", str(port))


def test_serve_refuses_a_data_dir_made_by_another_topology(tmp_path: Path) -> None:
    data = tmp_path / "data"
    check_topology(data, "cluster")
    assert json.loads((data / "topology.json").read_text())["topology"] == "cluster"
    result = serve({}, "--data-dir", str(data), "--topology", "sentinel")
    assert_refused(result, "--topology cluster")
    legacy = tmp_path / "legacy"
    (legacy / "redis").mkdir(parents=True)  # made before topologies: single
    assert_refused(serve({}, "--data-dir", str(legacy), "--topology", "cluster"), "single")
    assert_refused(serve({}, "--data-dir", str(data), "--topology", "ring"), "--topology")
    assert not (legacy / "topology.json").exists()
    assert set(os.listdir(data)) <= {"topology.json", "rankd.lock"}  # no server started


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "redis+cluster://127.0.0.1:7000",
        "redis+sentinel://127.0.0.1:26379/m",
    ],
)
def test_redis_reads_wait_for_a_busy_redis(url: str) -> None:
    """No read timeout (redis-py 8 defaults to 5 s): a Redis busy for longer (a large
    rebuild's swap, a flush of millions of entries) is waited for, not turned into errors,
    and no read pays for a timer. A dead Redis still fails at once (connection reset)."""
    client: Any = connect(parse_redis_url(url), max_connections=2, pool_timeout_s=1)
    if url.startswith("redis+cluster"):
        kwargs = client.nodes_manager.connection_kwargs
    elif url.startswith("redis+sentinel"):
        kwargs = client.connection_pool.connection_kwargs
    else:
        kwargs = client.connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] is None
    assert kwargs["socket_connect_timeout"] == 5
    # redis-py 8's "auto" maintenance notices also skip the pool's check that a connection
    # handed out was not closed by a restarted server (test_redis_restart.py)
    if url.startswith("redis+cluster"):
        assert client.maint_notifications_config.enabled is False
    else:
        assert not client.connection_pool.maint_notifications_enabled()
