"""Tests for rankd.embedded: real redis-server / postgres / nats-server processes, no mocks."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    from rankd import embedded
except ImportError:  # not installed and no pytest pythonpath config: use the src layout
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))
    from rankd import embedded

import psycopg
import redis

from rankd.embedded import (
    EmbeddedServerError,
    EmbeddedServers,
    NatsServer,
    PostgresServer,
    RedisServer,
    start_embedded,
)


def _pid_gone(pid: int) -> bool:
    """True if no live (non-zombie) process has this pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():  # a zombie (not ours to reap) counts as gone
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
        return state in ("Z", "X")
    return False


def _processes_mentioning(text: str) -> list[int]:
    """PIDs of live processes whose command line contains ``text`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline and not _pid_gone(int(entry.name)):
            found.append(int(entry.name))
    return found


def _members(servers: EmbeddedServers) -> tuple[RedisServer, PostgresServer, NatsServer]:
    assert servers.redis is not None
    assert servers.postgres is not None
    assert servers.nats is not None
    return servers.redis, servers.postgres, servers.nats


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[EmbeddedServers]:
    with start_embedded(tmp_path / "data") as s:
        yield s


async def _js_roundtrip(url: str, stream: str, payload: bytes | None) -> list[bytes]:
    """Check JetStream works; optionally publish ``payload``; return all stream messages."""
    import nats

    nc = await nats.connect(url, connect_timeout=5, max_reconnect_attempts=0)
    try:
        js = nc.jetstream()
        info = await js.account_info()
        assert info.streams >= 0 and info.api.errors == 0
        await js.add_stream(name=stream, subjects=[f"{stream}.>"])
        if payload is not None:
            ack = await js.publish(f"{stream}.x", payload)
            assert ack.stream == stream
        state = (await js.stream_info(stream)).state
        return [
            (await js.get_msg(stream, seq)).data or b""
            for seq in range(state.first_seq, state.last_seq + 1)
            if state.messages
        ]
    finally:
        await nc.close()


def test_binaries_found() -> None:
    for path in (embedded.find_redis_server(), embedded.find_nats_server()):
        assert path.is_file() and os.access(path, os.X_OK)
    bin_dir = embedded.find_postgres_bin_dir()
    assert (bin_dir / "postgres").is_file() and (bin_dir / "initdb").is_file()


def test_free_port_is_bindable() -> None:
    port = embedded.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_all_three_work(servers: EmbeddedServers, tmp_path: Path) -> None:
    r, pg, n = _members(servers)
    assert servers.redis_url == f"redis://127.0.0.1:{r.port}/0"
    assert servers.postgres_url == f"postgresql://postgres@127.0.0.1:{pg.port}/rankd"
    assert servers.nats_url == f"nats://127.0.0.1:{n.port}"
    assert len({r.port, pg.port, n.port, n.monitor_port}) == 4
    for srv, sub in ((r, "redis"), (pg, "postgres"), (n, "nats")):
        assert srv.is_running() and srv.pid is not None
        assert srv.directory == tmp_path / "data" / sub

    client = redis.Redis.from_url(servers.redis_url)
    try:
        assert client.ping() is True
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("appendfsync") == {"appendfsync": "everysec"}
        assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
        assert client.config_get("save") == {"save": ""}
        assert client.config_get("bind") == {"bind": "127.0.0.1"}
    finally:
        client.close()

    with psycopg.connect(servers.postgres_url, connect_timeout=5) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        row = conn.execute(
            "SELECT current_database(), current_setting('fsync'),"
            " current_setting('synchronous_commit'), current_setting('listen_addresses')"
        ).fetchone()
        assert row == ("rankd", "on", "on", "127.0.0.1")

    assert asyncio.run(_js_roundtrip(servers.nats_url, "T1", b"hello")) == [b"hello"]
    conf = n.config_path.read_text()
    assert "sync_interval: always" in conf


def test_data_survives_stop_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with start_embedded(data) as s:
        r, pg, n = _members(s)
        ports = (r.port, pg.port, n.port)
        client = redis.Redis.from_url(s.redis_url)
        client.set("k", "v1")
        client.zadd("board", {"alice": 10})
        client.close()
        with psycopg.connect(s.postgres_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE t (x int)")
            conn.execute("INSERT INTO t VALUES (42)")
        asyncio.run(_js_roundtrip(s.nats_url, "KEEP", b"m1"))

    # same server objects: restart on the same ports
    for srv in (r, pg, n):
        assert not srv.is_running()
        srv.start()
    try:
        assert (r.port, pg.port, n.port) == ports
        client = redis.Redis.from_url(r.url)
        assert client.get("k") == b"v1"
        assert client.zscore("board", "alice") == 10
        client.close()
        with psycopg.connect(pg.url) as conn:
            assert conn.execute("SELECT x FROM t").fetchall() == [(42,)]
        assert asyncio.run(_js_roundtrip(n.url, "KEEP", None)) == [b"m1"]
    finally:
        EmbeddedServers(r, pg, n).stop()

    # a fresh start_embedded on the same data dir (new ports) sees the same data
    with start_embedded(data) as s2:
        client = redis.Redis.from_url(s2.redis_url)
        assert client.get("k") == b"v1"
        client.close()
        with psycopg.connect(s2.postgres_url) as conn:
            assert conn.execute("SELECT x FROM t").fetchall() == [(42,)]
        assert asyncio.run(_js_roundtrip(s2.nats_url, "KEEP", b"m2")) == [b"m1", b"m2"]


def test_kill_then_start_same_port(servers: EmbeddedServers) -> None:
    r, pg, n = _members(servers)
    client = redis.Redis.from_url(r.url)
    client.set("before-kill", "1")  # written to the AOF (page cache) before the reply
    client.close()
    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE crash (x int)")
        conn.execute("INSERT INTO crash VALUES (1)")
    asyncio.run(_js_roundtrip(n.url, "CRASH", b"acked"))

    for srv in (r, pg, n):
        port, old_pid = srv.port, srv.pid
        assert old_pid is not None
        srv.kill()
        assert not srv.is_running()
        assert srv.returncode == -9
        assert _pid_gone(old_pid)
        srv.start()
        assert srv.is_running() and srv.port == port and srv.pid != old_pid

    client = redis.Redis.from_url(r.url)
    assert client.get("before-kill") == b"1"
    client.close()
    with psycopg.connect(pg.url) as conn:  # committed => survives kill -9 (crash recovery)
        assert conn.execute("SELECT x FROM crash").fetchall() == [(1,)]
    # sync_interval: always => an acked message survives kill -9
    assert asyncio.run(_js_roundtrip(n.url, "CRASH", None)) == [b"acked"]


def test_postgres_kill_removes_children(servers: EmbeddedServers) -> None:
    _, pg, _ = _members(servers)
    conn = psycopg.connect(pg.url, autocommit=True)
    backend_pid = conn.info.backend_pid
    try:
        pg.kill()
        assert _pid_gone(backend_pid)  # backends call setsid(); must be killed too
    finally:
        conn.close()
    pg.start()
    with psycopg.connect(pg.url) as conn2:
        assert conn2.execute("SELECT 1").fetchone() == (1,)


def test_stop_leaves_nothing_running(tmp_path: Path) -> None:
    s = start_embedded(tmp_path / "data")
    members = _members(s)
    pids = [srv.pid for srv in members]
    s.stop()
    for srv, pid in zip(members, pids, strict=True):
        assert pid is not None
        assert srv.returncode is not None
        assert not srv.is_running()
        assert _pid_gone(pid)
    assert _processes_mentioning(str(tmp_path)) == []
    assert not (tmp_path / "data" / "postgres" / "postmaster.pid").exists()
    s.stop()  # idempotent
    members[0].stop()


def test_stop_tolerates_dead_processes(servers: EmbeddedServers) -> None:
    r, _, n = _members(servers)
    assert r.pid is not None and n.pid is not None
    os.kill(r.pid, 9)  # dies behind the module's back
    n.kill()
    servers.stop()
    servers.stop()
    assert not any(srv.is_running() for srv in _members(servers))


def test_only_some_servers(tmp_path: Path) -> None:
    with start_embedded(tmp_path / "data", postgres=False, nats=False) as s:
        assert s.postgres is None and s.nats is None
        assert s.redis is not None and s.redis.is_running()
        with pytest.raises(EmbeddedServerError):
            _ = s.postgres_url
        with pytest.raises(EmbeddedServerError):
            _ = s.nats_url
    assert not (tmp_path / "data" / "postgres").exists()


def test_second_instance_on_same_dir_is_refused(servers: EmbeddedServers) -> None:
    r, pg, n = _members(servers)
    for cls in (RedisServer, PostgresServer, NatsServer):
        with pytest.raises(EmbeddedServerError, match="already running"):
            cls(r.data_dir).start()
    assert r.is_running() and pg.is_running() and n.is_running()


def test_failed_start_stops_the_others(tmp_path: Path) -> None:
    before = set(embedded.process._running)  # e.g. the session's shared servers
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        with pytest.raises(EmbeddedServerError, match="redis failed to start"):
            start_embedded(tmp_path / "data", redis_port=taken)
    assert _processes_mentioning(str(tmp_path)) == []
    assert set(embedded.process._running) == before  # nothing left for the atexit hook either


@pytest.mark.parametrize("cls", [RedisServer, PostgresServer, NatsServer])
def test_auto_port_taken_before_start_is_replaced(
    tmp_path: Path, cls: type[RedisServer | PostgresServer | NatsServer]
) -> None:
    srv = cls(tmp_path / "data")
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", srv.port))
        squatter.listen()
        taken = srv.port
        srv.start()
    try:
        assert srv.is_running() and srv.port != taken
    finally:
        srv.stop()


def test_postgres_stale_pidfile_with_reused_pid(tmp_path: Path) -> None:
    import subprocess

    pg = PostgresServer(tmp_path / "data")
    pg.start()
    pg.stop()
    # a crashed postmaster's lock file whose pid now belongs to an unrelated live process
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        lock = pg.directory / "postmaster.pid"
        lock.write_text(f"{sleeper.pid}\n{pg.directory}\n0\n{pg.port}\n\n127.0.0.1\n0 0\nready\n")
        pg.start()
        assert pg.is_running()
    finally:
        pg.stop()
        sleeper.kill()
        sleeper.wait()


def test_atexit_hook_stops_servers(tmp_path: Path) -> None:
    import subprocess

    src = Path(embedded.__file__).resolve().parents[2]  # src/rankd/embedded/__init__.py
    script = (
        "import sys; from pathlib import Path; from rankd.embedded import start_embedded\n"
        f"s = start_embedded(Path({str(tmp_path / 'data')!r}))\n"
        "print(' '.join(str(x.pid) for x in s.servers), flush=True)\n"
        "sys.exit(3)  # without stopping anything\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    res = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 3, res.stderr
    pids = [int(p) for p in res.stdout.split()]
    assert len(pids) == 3
    assert all(_pid_gone(pid) for pid in pids)
    assert _processes_mentioning(str(tmp_path)) == []


@pytest.mark.parametrize("cls", [RedisServer, PostgresServer, NatsServer])
def test_port_grabbed_by_another_server_is_not_mistaken_for_ours(
    tmp_path: Path, cls: type[RedisServer | PostgresServer | NatsServer]
) -> None:
    other = cls(tmp_path / "other")
    other.start()
    try:
        srv = cls(tmp_path / "mine")
        srv.port = other.port  # simulate the race: an auto-picked port got taken meanwhile
        srv.start()
        try:
            assert srv.is_running() and srv.port != other.port
        finally:
            srv.stop()
        assert other.is_running()
    finally:
        other.stop()
