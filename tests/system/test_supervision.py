"""Faults heal without a person: `rankd serve` on its embedded default restarts a server
that was killed, restores what it lost, and says so in /readyz.

Each kill test starts `rankd serve --data-dir` with no service URLs (so it owns its Redis,
PostgreSQL and NATS), streams runs and reads at it, kill -9s one server by the pid in its
data dir, and then, with no restart by anyone but the service:

* measures the recovery, from the kill to steady 2xx (the end of the last failed submit or
  read, with only 2xx for the seconds of load after it) and to /readyz 200;
* checks /readyz said 503 (naming the server) during the recovery and that, the moment it
  says 200 again, every run acknowledged so far is readable (ready means reads are whole);
* checks the killed server was reaped (no ``<defunct>`` child) and runs again;
* prints ``acknowledged lost: 0 of N`` after checking every acknowledged run (as
  tests/system/test_failures.py does), and the log-held runs without a 2xx too.

The backoff policy and the recovery bookkeeping are pure logic, tested at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from rankd.embedded import RedisServer, free_port
from rankd.embedded.supervisor import Backoff, Supervisor, read_status
from rankd.services.recovery import Recovery
from tests.system.test_failures import (
    ADMIN_H,
    ADMIN_KEY,
    MAX_RUN_SCORE,
    SERVER_KEY,
    WINDOWS,
    Ledger,
    _missing,
    periods_of,
    read_log,
    scores,
    settle,
    stream,
    verdict_failures,
    wait_acked,
)

pytestmark = pytest.mark.timeout(150)

RECOVERY_GOAL_S = 10.0


@dataclass
class Owned:
    """A `rankd serve` that owns its embedded servers."""

    data_dir: Path
    port: int
    process: subprocess.Popen[bytes]
    http: httpx.AsyncClient
    board: str = ""

    @property
    def urls(self) -> dict[str, str]:
        found: dict[str, str] = json.loads((self.data_dir / "services.json").read_text())
        return found

    def server_pid(self, name: str) -> int:
        pidfile = "postmaster.pid" if name == "postgres" else "rankd-embedded.pid"
        return int((self.data_dir / name / pidfile).read_text().split()[0])

    def log(self) -> str:
        text = (self.data_dir.parent / "service.log").read_text("utf-8", "replace")
        return "\n".join(text.splitlines()[-40:])


def spawn(
    server_dir: Path, port: int, data_dir: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    with (server_dir / "service.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "rankd.cli", "serve", "--port", str(port),
             "--data-dir", str(data_dir)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=server_dir,
        )  # fmt: skip


@contextlib.asynccontextmanager
async def owned_service(server_dir: Path) -> AsyncIterator[Owned]:
    data_dir = server_dir / "data"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKD_")}
    env |= {
        "RANKD_ADMIN_KEYS": ADMIN_KEY,
        "RANKD_SERVER_KEYS": SERVER_KEY,
        "RANKD_LOG_LEVEL": "warning",
    }
    process = spawn(server_dir, port, data_dir, env)
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}",
        timeout=httpx.Timeout(15.0, connect=3.0),
        limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
    ) as http:
        owned = Owned(data_dir, port, process, http)
        try:
            deadline = time.monotonic() + 90
            while True:
                assert process.poll() is None, f"rankd serve exited:\n{owned.log()}"
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get("/readyz", timeout=2)).status_code == 200:
                        break
                assert time.monotonic() < deadline, f"not ready:\n{owned.log()}"
                await asyncio.sleep(0.1)
            owned.board = f"heal-{os.urandom(5).hex()}"
            created = await http.put(
                f"/v1/boards/{owned.board}",
                json={"windows": list(WINDOWS), "max_run_score": MAX_RUN_SCORE},
                headers=ADMIN_H,
            )
            assert created.status_code == 201, created.text
            yield owned
        except BaseException:
            print(f"--- service log (last lines) ---\n{owned.log()}")
            raise
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


@dataclass
class Watch:
    """Reads and /readyz polled through the fault: (sent, answered, ok) and the readyz
    states seen."""

    reads: list[tuple[float, float, bool]] = field(default_factory=list)
    ready: list[tuple[float, int, dict[str, object]]] = field(default_factory=list)
    said: dict[float, str] = field(default_factory=dict)  # a failed read's answer, by t0


async def read_loop(http: httpx.AsyncClient, board: str, watch: Watch, stop: asyncio.Event) -> None:
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            response = await http.get(f"/v1/boards/{board}/top", params={"n": 10})
            ok = response.status_code == 200
            if not ok:
                watch.said[t0] = f"{response.status_code} {response.text[:300]}"
        except httpx.HTTPError as exc:
            ok = False
            watch.said[t0] = repr(exc)
        watch.reads.append((t0, time.monotonic(), ok))
        await asyncio.sleep(0.05)


async def read_whole(
    http: httpx.AsyncClient, board: str, window: str, period: str
) -> dict[str, int]:
    """A period's entries in one read (the load goes on: pages could shift between reads)."""
    params: dict[str, str | int] = {"n": 1000, "window": window, "period": period}
    response = await http.get(f"/v1/boards/{board}/top", params=params)
    assert response.status_code == 200, response.text
    assert response.json()["total"] <= 1000
    return scores(response.json()["entries"])


def zombies_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] == "Z" and int(fields[1]) == pid:
                    found.append(int(entry.name))
    return found


async def kill_and_heal(server_dir: Path, name: str) -> None:
    """The scenario for server ``name``; see the module docstring."""
    began = time.monotonic()
    failures: list[str] = []
    async with owned_service(server_dir) as s:
        ledger, watch = Ledger(), Watch()
        stop = asyncio.Event()
        load = asyncio.create_task(stream(s.http, s.board, ledger, seconds=60, stop=stop))
        reads = asyncio.create_task(read_loop(s.http, s.board, watch, stop))
        victim = s.server_pid(name)
        try:
            await wait_acked(ledger, 300, within_s=8)
            killed = time.monotonic()
            os.kill(victim, signal.SIGKILL)
            acked_before = len(ledger.acked)
            ready_at, missing_at_ready, acked_at_ready = await until_ready(s, ledger, watch, killed)
            # steady load after readiness: every answer from here on must be a 2xx
            await asyncio.sleep(3)
        finally:
            stop.set()
            await asyncio.gather(load, reads)
        ended = time.monotonic()
        answers = [(r.t0, r.t1, True) for r in ledger.acked.values()]
        answers += [(r.t0, r.t1, False) for r in ledger.maybe()]
        answers += [(r.t0, r.t1, False) for r in ledger.unsent.values()]
        answers += watch.reads
        failed = [t1 for t0, t1, ok in answers if not ok and t1 >= killed]
        steady = max(failed, default=killed) - killed
        late = [t1 - killed for t0, t1, ok in answers if not ok and t0 >= ready_at]
        late_said = [
            f"submit {r.t0 - killed:.2f}s after the kill: {ledger.said.get(r.run_id, '?')}"
            for r in ledger.maybe()
            if r.t0 >= ready_at
        ] + [
            f"read {t0 - killed:.2f}s after the kill: {text}"
            for t0, text in watch.said.items()
            if t0 >= ready_at
        ]
        not_ready = [body for t, status, body in watch.ready if status == 503]
        restarted = s.server_pid(name)
        print(
            f"\n[heal-{name}] kill -9 {name} (pid {victim}) after {acked_before} acks: "
            f"steady 2xx {steady:.2f}s after the kill, /readyz 200 after "
            f"{ready_at - killed:.2f}s (503 {len(not_ready)} times, e.g. "
            f"{not_ready[-1].get('recovering') if not_ready else None}); restarted as pid "
            f"{restarted}; {ledger.summary()}; load ran {ended - ready_at:.1f}s past readiness"
        )
        if missing_at_ready:
            failures.append(
                f"/readyz said 200 while {len(missing_at_ready)} of {acked_at_ready} "
                f"acknowledged runs were not readable, e.g. {missing_at_ready[:3]}"
            )
        if not not_ready:
            failures.append("/readyz never said 503 after the kill")
        elif not any(name in json.dumps(b) for b in not_ready):
            failures.append(f"/readyz never named {name}: {not_ready[:2]}")
        if late:
            failures.append(
                f"{len(late)} requests failed after /readyz said 200 again "
                f"({ready_at - killed:.2f}s after the kill): {late_said[:4]}"
            )
        if steady > RECOVERY_GOAL_S or ready_at - killed > RECOVERY_GOAL_S:
            failures.append(f"recovery took {steady:.1f}s / {ready_at - killed:.1f}s")
        if restarted == victim:
            failures.append(f"{name} was not restarted")
        if zombies_of(s.process.pid):
            failures.append(f"defunct children of rankd serve: {zombies_of(s.process.pid)}")
        status = read_status(s.data_dir / "supervisor.json").get(name, {})
        if status.get("restarts") != 1 or status.get("state") != "running":
            failures.append(f"supervisor status of {name}: {status}")

        logged, log_failures = await read_log(f"heal-{name}", s.urls["nats_url"], ledger)
        verdict, settled_s = await settle(s.http, s.board, ledger, 20, (), logged)
        failures += log_failures + verdict_failures(f"heal-{name}", ledger, verdict, settled_s)
    print(f"[heal-{name}] took {time.monotonic() - began:.1f}s")
    assert not failures, "\n".join(failures)


async def until_ready(
    s: Owned, ledger: Ledger, watch: Watch, killed: float
) -> tuple[float, list[str], int]:
    """Poll /readyz from the kill until it is 200 again (after a 503); at that moment read
    every board and return (when, the acknowledged runs not readable, how many acked)."""
    seen_503 = False
    while time.monotonic() - killed < 30:
        t = time.monotonic()
        try:
            response = await s.http.get("/readyz", timeout=3)
            status, body = response.status_code, response.json()
        except (httpx.HTTPError, ValueError):
            status, body = 0, {}
        watch.ready.append((t, status, body))
        if status != 200:
            seen_503 = True
        elif seen_503:
            # "ready" holds from when the answer came: a request sent while /readyz was
            # being answered may still have met the last moment of the recovery
            said = time.monotonic()
            acked = list(ledger.acked.values())  # acknowledged before readiness was said
            wps = {wp for run in acked for wp in periods_of(run)}
            boards = {wp: await read_whole(s.http, s.board, *wp) for wp in wps}
            return said, [r.run_id for r in acked if _missing(r, boards)], len(acked)
        await asyncio.sleep(0.05)
    raise AssertionError(f"/readyz not 200 again within 30 s: {watch.ready[-1:]}\n{s.log()}")


@pytest.mark.slow
async def test_a_killed_redis_is_restarted_rebuilt_and_loses_no_acknowledged_run(
    server_dir: Path,
) -> None:
    await kill_and_heal(server_dir, "redis")


@pytest.mark.slow
async def test_a_killed_nats_is_restarted_and_loses_no_acknowledged_run(server_dir: Path) -> None:
    await kill_and_heal(server_dir, "nats")


@pytest.mark.slow
async def test_a_killed_postgres_is_restarted_and_loses_no_acknowledged_run(
    server_dir: Path,
) -> None:
    await kill_and_heal(server_dir, "postgres")


# --------------------------------------------------------------------------- giving up


def test_a_server_that_cannot_start_again_is_given_up_after_bounded_attempts(
    server_dir: Path,
) -> None:
    """A real Redis killed, then made unable to start (its log file is a directory): a few
    attempts with backoff, then the supervisor gives up and says so in its status."""
    redis = RedisServer(server_dir, start_timeout=5)
    redis.start()
    status_path = server_dir / "supervisor.json"
    supervisor = Supervisor(
        [redis],
        status_path,
        interval_s=0.05,
        backoff=Backoff(first_s=0.0, then_s=0.05, max_s=0.1, max_attempts=3),
    )
    supervisor.start()
    try:
        pid = redis.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while read_status(status_path).get("redis", {}).get("restarts") != 1:
            assert time.monotonic() < deadline, read_status(status_path)
            time.sleep(0.05)
        assert redis.is_running() and redis.pid != pid
        assert not zombies_of(os.getpid())

        redis.log_path.unlink()
        redis.log_path.mkdir()  # redis-server cannot open its log: every start fails
        os.kill(redis.pid, signal.SIGKILL)  # type: ignore[arg-type]
        deadline = time.monotonic() + 20
        while read_status(status_path).get("redis", {}).get("state") != "failed":
            assert time.monotonic() < deadline, read_status(status_path)
            time.sleep(0.05)
        status = read_status(status_path)["redis"]
        assert status["attempt"] == 4 and status["last_error"], status
        assert not redis.is_running()
        assert not zombies_of(os.getpid())
    finally:
        supervisor.stop()
        redis.stop()


# --------------------------------------------------------------------------- pure logic


def test_backoff_starts_at_once_then_grows_to_a_bound_and_gives_up() -> None:
    backoff = Backoff(first_s=0.0, then_s=0.5, factor=2.0, max_s=3.0, max_attempts=5)
    assert [backoff.delay(n) for n in range(1, 7)] == [0.0, 0.5, 1.0, 2.0, 3.0, 3.0]
    assert not backoff.gives_up(5)
    assert backoff.gives_up(6)


def test_recovery_ends_once_the_log_is_applied_up_to_the_target() -> None:
    recovery = Recovery()
    recovery.begin("redis", "rebuilding")
    assert recovery.waiting("redis")
    assert recovery.applied(100, idle=True) == []  # no target yet: still rebuilding
    recovery.back("redis", 120)
    assert "120" in recovery.describe()["redis"]
    assert recovery.applied(119, idle=False) == []
    recovery.begin("redis", "down again")  # lost again: the old target no longer holds
    assert recovery.waiting("redis")
    recovery.back("redis", 130)
    assert recovery.applied(125, idle=True) == ["redis"]  # nothing pending at all
    assert recovery.describe() == {}
