"""Failure injection: every acknowledged run survives crashes and outages of each piece.

Each test starts its own embedded Redis, PostgreSQL and NATS and its own ``rankd serve``
subprocess pointed at them through the RANKD_*_URL variables, so one piece at a time can be
killed, wiped or stopped. A few async workers submit random runs for ~200 players while the
fault is injected; every answer is recorded:

* 2xx: **acknowledged**, must be on the boards after recovery;
* 503, another 5xx, or no answer (timeout, connection dropped mid-request): **maybe** — the
  run may or may not be on the boards;
* connection refused: never sent.

Afterwards, for every window and period the runs fell in, a player's score on the board
must be at least the best acknowledged score of that player, and must be one of that
player's acknowledged-or-maybe scores (so never a score nobody submitted). Each test prints
``acknowledged lost: L of N``. Every 2xx run must also be in the JetStream log, and a run
without a 2xx that the log holds anyway must end up on the boards too (the log consumer
applies everything logged).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nats
import nats.errors
import nats.js.errors
import pytest
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from redis.asyncio import Redis

from rankd.embedded import EmbeddedServers, free_port, start_embedded
from tests.support.durable import PgBest, pg_best_at, wait_consumer_idle
from tests.support.wire import daily_id, from_ms, iso

ADMIN_KEY = "failures-admin"
SERVER_KEY = "failures-server"
ADMIN_H = {"Authorization": f"Bearer {ADMIN_KEY}"}
SERVER_H = {"Authorization": f"Bearer {SERVER_KEY}"}

WINDOWS = ("all-time", "daily")
PLAYERS = [f"p{i:03d}" for i in range(200)]
MAX_RUN_SCORE = 1_000_000
PAGE = 100  # top page size: 200 players take several pages
WORKERS = 6

WindowPeriod = tuple[str, str]

pytestmark = pytest.mark.timeout(120)


# --------------------------------------------------------------------------- the ledger


@dataclass(frozen=True)
class Sent:
    run_id: str
    player: str
    score: int
    ended_ms: int
    t0: float  # monotonic: request sent
    t1: float  # monotonic: answer (or error) received


@dataclass
class Ledger:
    """Every submitted run, by what the client learned about it."""

    acked: dict[str, Sent] = field(default_factory=dict)
    unavailable: dict[str, Sent] = field(default_factory=dict)  # 503
    unknown: dict[str, Sent] = field(default_factory=dict)  # other 5xx / no answer
    unsent: dict[str, Sent] = field(default_factory=dict)  # connection refused
    rejected: dict[str, tuple[Sent, int, str]] = field(default_factory=dict)  # 4xx
    outcomes: Counter[str] = field(default_factory=Counter)
    said: dict[str, str] = field(default_factory=dict)  # a 5xx's message, by run id

    def maybe(self) -> Iterable[Sent]:
        return itertools.chain(self.unavailable.values(), self.unknown.values())

    def all_sent(self) -> Iterable[Sent]:
        return itertools.chain(
            self.acked.values(),
            self.maybe(),
            self.unsent.values(),
            (s for s, _, _ in self.rejected.values()),
        )

    def all_sent_ids(self) -> set[str]:
        return {s.run_id for s in self.all_sent()}

    def summary(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.outcomes.items()))


def periods_of(run: Sent) -> list[WindowPeriod]:
    return [("all-time", "all-time"), ("daily", daily_id(from_ms(run.ended_ms)))]


async def submit_one(
    http: httpx.AsyncClient, board: str, ledger: Ledger, player: str, score: int, prefix: str
) -> int | None:
    """Submit one run and file it in the ledger; returns the status (None: no answer)."""
    ended_ms = int(time.time() * 1000)
    run_id = f"{prefix}-{uuid.uuid4().hex[:16]}"
    body = {
        "run_id": run_id,
        "player_id": player,
        "score": score,
        "ended_at": iso(from_ms(ended_ms)),
    }
    t0 = time.monotonic()
    try:
        response = await http.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    except httpx.ConnectError:
        ledger.unsent[run_id] = Sent(run_id, player, score, ended_ms, t0, time.monotonic())
        ledger.outcomes["connect-refused"] += 1
        await asyncio.sleep(0.05)
        return None
    except httpx.TransportError as exc:
        ledger.unknown[run_id] = Sent(run_id, player, score, ended_ms, t0, time.monotonic())
        ledger.outcomes[type(exc).__name__] += 1
        await asyncio.sleep(0.05)
        return None
    sent = Sent(run_id, player, score, ended_ms, t0, time.monotonic())
    status = response.status_code
    if 200 <= status < 300:
        answer = response.json()
        assert answer["run_id"] == run_id and answer["score"] == score, answer
        assert [s["window"] for s in answer["standings"]] == list(WINDOWS), answer
        ledger.acked[run_id] = sent
        ledger.outcomes[str(status)] += 1
        return status
    try:
        code = str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        code = "?"
    ledger.outcomes[f"{status}:{code}"] += 1
    if status >= 500:
        ledger.said[run_id] = response.text[:300]
    if status == 503:
        ledger.unavailable[run_id] = sent
    elif status >= 500:
        ledger.unknown[run_id] = sent
    else:
        ledger.rejected[run_id] = (sent, status, response.text)
    await asyncio.sleep(0.02)
    return status


async def stream(
    http: httpx.AsyncClient,
    board: str,
    ledger: Ledger,
    *,
    seconds: float,
    count: int = 100_000,
    players: list[str] = PLAYERS,
    workers: int = WORKERS,
    stop: asyncio.Event | None = None,
    prefix: str = "r",
) -> None:
    """Random runs from ``workers`` concurrent clients until ``count``, ``seconds`` or ``stop``."""
    deadline = time.monotonic() + seconds
    numbers = itertools.count()

    async def worker() -> None:
        rng = random.Random()
        while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
            if next(numbers) >= count:
                return
            player = rng.choice(players)
            await submit_one(http, board, ledger, player, rng.randint(0, MAX_RUN_SCORE), prefix)

    await asyncio.gather(*(worker() for _ in range(workers)))


async def wait_acked(ledger: Ledger, n: int, within_s: float) -> None:
    """Let the stream get going: until ``n`` runs were acknowledged (or ``within_s``)."""
    for _ in range(int(within_s / 0.05)):
        if len(ledger.acked) >= n:
            break
        await asyncio.sleep(0.05)
    assert ledger.acked, f"no run was acknowledged before the fault: {ledger.summary()}"


# --------------------------------------------------------------------------- reading back


async def read_top(
    http: httpx.AsyncClient, board: str, window: str, period: str
) -> list[dict[str, Any]]:
    """Every entry of one period, paging through ``top``."""
    entries: list[dict[str, Any]] = []
    while True:
        params: dict[str, str | int] = {
            "n": PAGE,
            "offset": len(entries),
            "window": window,
            "period": period,
        }
        response = await http.get(f"/v1/boards/{board}/top", params=params)
        assert response.status_code == 200, response.text
        page = response.json()["entries"]
        entries += page
        if len(page) < PAGE:
            break
    players = [e["player_id"] for e in entries]
    assert len(players) == len(set(players)), f"{window}/{period}: a player appears twice"
    assert [e["rank"] for e in entries] == list(range(1, len(entries) + 1))
    return entries


async def read_boards(
    http: httpx.AsyncClient, board: str, wps: Iterable[WindowPeriod]
) -> dict[WindowPeriod, list[dict[str, Any]]]:
    return {wp: await read_top(http, board, *wp) for wp in sorted(set(wps))}


def scores(entries: list[dict[str, Any]]) -> dict[str, int]:
    return {e["player_id"]: int(e["score"]) for e in entries}


@dataclass
class Verdict:
    acked: int
    lost: set[str]
    problems: list[str]
    logged_maybe: int = 0  # runs without a 2xx that the log holds: they must show up too
    lost_logged: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.lost and not self.problems and not self.lost_logged

    def line(self) -> str:
        return f"acknowledged lost: {len(self.lost)} of {self.acked}"

    def logged_line(self) -> str:
        return f"logged (503 or no answer) lost: {len(self.lost_logged)} of {self.logged_maybe}"


def _missing(run: Sent, boards: dict[WindowPeriod, dict[str, int]]) -> bool:
    """Whether some board period of ``run`` does not reflect it."""
    for wp in periods_of(run):
        held = boards.get(wp, {}).get(run.player)
        if held is None or held < run.score:
            return True
    return False


def verify(
    ledger: Ledger,
    boards: dict[WindowPeriod, dict[str, int]],
    absent: Iterable[str] = (),
    logged: set[str] | None = None,
) -> Verdict:
    """The boards against the ledger (see the module docstring).

    With ``logged`` (the run ids in the log) it is exact: a run without a 2xx that the log
    holds must be reflected as well (the log consumer applies every logged run), one the log
    lacks was never applied anywhere, so each entry is the best acknowledged-or-logged run.
    """
    maybe = [r for r in ledger.maybe() if logged is None or r.run_id in logged]
    possible: dict[tuple[WindowPeriod, str], set[int]] = defaultdict(set)
    for run in itertools.chain(ledger.acked.values(), maybe):
        for wp in periods_of(run):
            possible[(wp, run.player)].add(run.score)
    lost = {run.run_id for run in ledger.acked.values() if _missing(run, boards)}
    logged_maybe = maybe if logged is not None else []
    lost_logged = {r.run_id for r in logged_maybe if _missing(r, boards)}
    problems: list[str] = []
    for wp, entries in boards.items():
        for player, score in entries.items():
            candidates = possible.get((wp, player))
            if not candidates:
                problems.append(f"{wp}: {player} holds {score} but has no acked/maybe run")
            elif score not in candidates:
                problems.append(f"{wp}: {player} holds {score}, which no such run had")
            # below the best acknowledged/logged run: counted in `lost` / `lost_logged`
    for player in absent:
        for wp, entries in boards.items():
            if player in entries:
                problems.append(f"{wp}: {player} holds {entries[player]} from a refused run")
    return Verdict(len(ledger.acked), lost, problems, len(logged_maybe), lost_logged)


async def check(
    http: httpx.AsyncClient,
    board: str,
    ledger: Ledger,
    absent: Iterable[str] = (),
    logged: set[str] | None = None,
) -> Verdict:
    wps = {wp for run in ledger.all_sent() for wp in periods_of(run)}
    tops = await read_boards(http, board, wps)
    return verify(ledger, {wp: scores(e) for wp, e in tops.items()}, absent, logged)


async def settle(
    http: httpx.AsyncClient,
    board: str,
    ledger: Ledger,
    within_s: float,
    absent: Iterable[str] = (),
    logged: set[str] | None = None,
) -> tuple[Verdict, float]:
    """Poll until the boards reflect every acknowledged run (or ``within_s`` passes)."""
    started = time.monotonic()
    absent = list(absent)
    verdict = Verdict(len(ledger.acked), set(ledger.acked), ["boards never read"])
    while True:
        try:
            verdict = await check(http, board, ledger, absent, logged)
        except (AssertionError, httpx.HTTPError) as exc:
            verdict = Verdict(len(ledger.acked), set(ledger.acked), [f"read failed: {exc!r}"])
        if verdict.ok or time.monotonic() - started > within_s:
            return verdict, time.monotonic() - started
        await asyncio.sleep(0.5)


def verdict_failures(name: str, ledger: Ledger, verdict: Verdict, settled_s: float) -> list[str]:
    """Print the verdict lines; return what is wrong (empty: all good)."""
    print(f"\n[{name}] {verdict.line()}  (settled in {settled_s:.1f}s; {ledger.summary()})")
    print(f"[{name}] {verdict.logged_line()}")
    failures = []
    if verdict.lost:
        missing = [ledger.acked[r] for r in sorted(verdict.lost)[:5]]
        failures.append(f"{len(verdict.lost)} acknowledged runs missing, e.g. {missing}")
    if verdict.lost_logged:
        maybe = {r.run_id: r for r in ledger.maybe()}
        missing = [maybe[r] for r in sorted(verdict.lost_logged)[:5]]
        failures.append(f"{len(verdict.lost_logged)} logged runs never applied, e.g. {missing}")
    failures += verdict.problems[:10]
    if ledger.rejected:
        failures.append(f"valid runs rejected: {list(ledger.rejected.values())[:3]}")
    return failures


def assert_verdict(name: str, ledger: Ledger, verdict: Verdict, settled_s: float) -> None:
    failures = verdict_failures(name, ledger, verdict, settled_s)
    assert not failures, "\n".join(failures)


async def logged_run_ids(nats_url: str, stream_name: str = "RUNS") -> set[str]:
    """Every run id in the JetStream log, read with an ephemeral consumer from the start.
    A replicated stream is briefly leaderless after a node left or rejoined: asked again."""
    for attempt in range(5):
        try:
            return await _logged_run_ids(nats_url, stream_name)
        except nats.js.errors.ServiceUnavailableError:
            if attempt == 4:
                raise
            await asyncio.sleep(1.0)
    raise AssertionError("unreachable")


async def _logged_run_ids(nats_url: str, stream_name: str) -> set[str]:
    nc = await nats.connect(nats_url.split(","), connect_timeout=5, allow_reconnect=False)
    try:
        js = nc.jetstream(timeout=5)
        last = int((await js.stream_info(stream_name)).state.last_seq)
        sub = await js.pull_subscribe(
            "runs.>",
            stream=stream_name,
            config=ConsumerConfig(
                name=f"test-reader-{uuid.uuid4().hex[:10]}",
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.NONE,
                inactive_threshold=30.0,
            ),
        )
        ids: set[str] = set()
        seen = 0
        try:
            while seen < last:
                try:
                    msgs = await sub.fetch(1000, timeout=3.0)
                except (TimeoutError, nats.errors.TimeoutError):
                    break
                for m in msgs:
                    seen = max(seen, int(m.metadata.sequence.stream))
                    body = json.loads(m.data)
                    assert body["v"] in (1, 2)  # 2: runs carry segments
                    ids.update(str(r[0]) for r in body["runs"])
        finally:
            await sub.unsubscribe()
        assert seen >= last, f"read the log up to {seen} of {last}"
        return ids
    finally:
        await nc.close()


async def read_log(name: str, nats_url: str, ledger: Ledger) -> tuple[set[str], list[str]]:
    """The run ids in the log, and a failure if a 2xx was given for a run not in it."""
    logged = await logged_run_ids(nats_url)
    missing = set(ledger.acked) - logged
    print(f"[{name}] acknowledged but not in the log: {len(missing)} of {len(ledger.acked)}")
    failures = [f"2xx given for runs not in the log: {sorted(missing)[:5]}"] if missing else []
    return logged, failures


# --------------------------------------------------------------------------- deployment


def service_env(servers: EmbeddedServers, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKD_")}
    env |= {
        "RANKD_REDIS_URL": servers.redis_url,
        "RANKD_POSTGRES_URL": servers.postgres_url,
        "RANKD_NATS_URL": servers.nats_url,
        "RANKD_ADMIN_KEYS": ADMIN_KEY,
        "RANKD_SERVER_KEYS": SERVER_KEY,
        "RANKD_LOG_LEVEL": "warning",
    }
    return env | extra


@dataclass
class Deployment:
    servers: EmbeddedServers
    dir: Path
    port: int
    env: dict[str, str]
    http: httpx.AsyncClient
    board: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def service(self) -> subprocess.Popen[bytes]:
        return self.processes[-1]

    def service_log(self) -> str:
        try:
            text = (self.dir / "service.log").read_text("utf-8", "replace")
        except OSError:
            return "<no service log>"
        return "\n".join(text.splitlines()[-40:])

    def _spawn(self) -> subprocess.Popen[bytes]:
        with (self.dir / "service.log").open("ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "rankd.cli", "serve", "--port", str(self.port)],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
            )

    async def start_service(self, within_s: float = 60.0) -> float:
        """Start `rankd serve` on the servers and wait for /readyz; returns the seconds."""
        started = time.monotonic()
        process = self._spawn()
        self.processes.append(process)
        while time.monotonic() - started < within_s:
            if process.poll() is not None:
                raise AssertionError(f"rankd serve exited during start:\n{self.service_log()}")
            with contextlib.suppress(httpx.HTTPError):
                if (await self.http.get("/readyz", timeout=2)).status_code == 200:
                    return time.monotonic() - started
            await asyncio.sleep(0.1)
        raise AssertionError(f"rankd serve not ready in {within_s}s:\n{self.service_log()}")

    def kill_service(self) -> None:
        self.service.send_signal(signal.SIGKILL)
        self.service.wait(10)

    def stop_services(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)

    async def create_board(self) -> str:
        self.board = f"fail-{uuid.uuid4().hex[:10]}"
        response = await self.http.put(
            f"/v1/boards/{self.board}",
            json={"windows": list(WINDOWS), "max_run_score": MAX_RUN_SCORE},
            headers=ADMIN_H,
        )
        assert response.status_code == 201, response.text
        return self.board


@contextlib.asynccontextmanager
async def deployment(server_dir: Path, **extra_env: str) -> AsyncIterator[Deployment]:
    """Own embedded servers + one `rankd serve` + a board; everything stopped afterwards."""
    servers = await asyncio.to_thread(start_embedded, server_dir / "data")
    try:
        port = free_port()
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}",
            timeout=httpx.Timeout(15.0, connect=3.0),
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
        ) as http:
            d = Deployment(servers, server_dir, port, service_env(servers, extra_env), http)
            try:
                await d.start_service()
                await d.create_board()
                yield d
            except BaseException:
                print(f"--- service log (last lines) ---\n{d.service_log()}")
                raise
            finally:
                await asyncio.to_thread(d.stop_services)
    finally:
        await asyncio.to_thread(servers.stop)


def wipe(directory: Path, keep: tuple[str, ...] = ("redis.log",)) -> list[str]:
    """Delete a directory's content (not the directory itself); returns what was removed."""
    removed = []
    for entry in directory.iterdir():
        if entry.name in keep:
            continue
        removed.append(entry.name)
        if entry.is_dir() and not entry.is_symlink():
            for sub in sorted(entry.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if sub.is_dir() and not sub.is_symlink():
                    sub.rmdir()
                else:
                    sub.unlink()
            entry.rmdir()
        else:
            entry.unlink()
    return removed


# --------------------------------------------------------------------------- scenarios


async def recover_and_check(
    name: str,
    d: Deployment,
    ledger: Ledger,
    within_s: float,
    absent: Iterable[str] = (),
    failures: list[str] | None = None,
) -> set[str]:
    """Read the log, let the boards settle, then assert (with any earlier ``failures``)."""
    failures = [] if failures is None else failures
    logged, log_failures = await read_log(name, d.servers.nats_url, ledger)
    verdict, settled_s = await settle(d.http, d.board, ledger, within_s, absent, logged)
    failures += log_failures + verdict_failures(name, ledger, verdict, settled_s)
    assert not failures, "\n".join(failures)
    return logged


@pytest.mark.slow
async def test_redis_killed_and_wiped_mid_stream_loses_no_acknowledged_run(
    server_dir: Path,
) -> None:
    """kill -9 Redis, delete its AOF, start it empty: rebuilt from PostgreSQL + the log."""
    name = "redis-kill-wipe"
    began = time.monotonic()
    async with deployment(server_dir) as d:
        ledger = Ledger()
        stop = asyncio.Event()
        load = asyncio.create_task(stream(d.http, d.board, ledger, seconds=25, stop=stop))
        redis = d.servers.redis
        assert redis is not None
        try:
            await wait_acked(ledger, 1500, within_s=7)
            await asyncio.to_thread(redis.kill)
            killed_after = len(ledger.acked)
            removed = wipe(redis.directory)
            assert any(n.startswith("append") for n in removed), removed
            await asyncio.sleep(0.5)
            await asyncio.to_thread(redis.start)
            restarted_at = time.monotonic()
            # Not much longer: most entries must come from the rebuild, not from new runs.
            await asyncio.sleep(2)
        finally:
            stop.set()
            await load
        after = sum(1 for s in ledger.acked.values() if s.t0 >= restarted_at)
        print(
            f"\n[{name}] killed after {killed_after} acks, removed {removed}; "
            f"{after} acks in the {time.monotonic() - restarted_at:.1f}s after the restart"
        )
        await recover_and_check(name, d, ledger, within_s=20)
        restored = (await d.http.get("/readyz")).json().get("redis_restored", "")
        print(f"[{name}] /readyz: {restored!r}")
        assert restored.startswith("rebuild from PostgreSQL (no recorded log position"), restored
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


async def wait_position(redis_url: str, within_s: float) -> int:
    """The log position recorded in Redis once there is one (services/rebuild/restart.py)."""
    client = Redis.from_url(redis_url)
    try:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            seq = await client.hget("rankd:{logpos}", "seq")
            if seq is not None and int(seq) > 0:
                return int(seq)
            await asyncio.sleep(0.1)
    finally:
        await client.aclose()
    raise AssertionError(f"no log position recorded in Redis within {within_s}s")


@pytest.mark.slow
async def test_redis_killed_with_its_aof_mid_stream_replays_only_the_tail(
    server_dir: Path,
) -> None:
    """kill -9 Redis and start it again from its AOF cut back by a second of writes: the log
    is replayed from the recorded position, no rebuild from PostgreSQL, nothing lost."""
    name = "redis-kill-aof"
    began = time.monotonic()
    async with deployment(server_dir, RANKD_LAG_REFRESH_S="0.5") as d:
        ledger = Ledger()
        stop = asyncio.Event()
        load = asyncio.create_task(stream(d.http, d.board, ledger, seconds=25, stop=stop))
        redis = d.servers.redis
        assert redis is not None
        try:
            await wait_acked(ledger, 1500, within_s=7)
            position = await wait_position(redis.url, within_s=5)
            aof = redis.directory / "appendonly.aof"
            kept, lost_from = aof.stat().st_size, len(ledger.acked)
            await asyncio.sleep(1.0)  # runs acknowledged from here on are in the lost part
            await asyncio.to_thread(redis.kill)
            killed_after = len(ledger.acked)
            # worse than appendfsync everysec allows: the last second of writes gone (Redis
            # loads an AOF cut mid-command, aof-load-truncated)
            with aof.open("r+b") as f:
                f.truncate(kept)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(redis.start)
            restarted_at = time.monotonic()
            stages: set[str] = set()
            while time.monotonic() - restarted_at < 20:
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    response = await d.http.get("/readyz", timeout=2)
                    stages.add(str(response.json().get("recovering", {}).get("redis", "")))
                    if response.status_code == 200 and "redis_restored" in response.json():
                        restored = response.json()["redis_restored"]
                        break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"not ready again within 20 s: {stages}")
        finally:
            stop.set()
            await load
        print(
            f"\n[{name}] position {position}, AOF cut {killed_after - lost_from} acks before "
            f"the kill -9 after {killed_after} acks; "
            f"/readyz: {restored!r}; stages seen: {sorted(s for s in stages if s)[:4]}"
        )
        assert restored.startswith("tail replay from sequence"), restored
        await recover_and_check(name, d, ledger, within_s=20)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


@pytest.mark.slow
async def test_a_run_id_conflict_is_refused_after_redis_is_killed_and_wiped(
    server_dir: Path,
) -> None:
    """kill -9 Redis and delete its AOF: the run-id registry is gone with it, yet a resend
    of a run id with other content is still refused (restored from PostgreSQL and the log
    before the next claim), and the boards keep the first content."""
    name = "redis-kill-conflict"
    async with deployment(server_dir) as d:
        url = f"/v1/boards/{d.board}/runs"
        first = {"run_id": "kept-1", "player_id": "alice", "score": 10}
        assert (await d.http.post(url, json=first, headers=SERVER_H)).status_code == 200
        redis = d.servers.redis
        assert redis is not None
        await asyncio.to_thread(redis.kill)
        wipe(redis.directory)
        await asyncio.to_thread(redis.start)
        other = {"run_id": "kept-1", "player_id": "bob", "score": 20}
        deadline = time.monotonic() + 30
        while True:  # 503 while the service finds Redis again
            response = await d.http.post(url, json=other, headers=SERVER_H)
            if response.status_code != 503 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        print(f"\n[{name}] conflicting send after the wipe: {response.status_code}")
        assert response.status_code == 409, response.text
        assert response.json()["error"]["code"] == "run_conflict"
        deadline = time.monotonic() + 30
        while True:  # the rebuild restores alice
            top = await d.http.get(f"/v1/boards/{d.board}/top")
            entries = [(e["player_id"], e["score"]) for e in top.json().get("entries", [])]
            if entries == [("alice", 10)] or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        assert entries == [("alice", 10)]


@pytest.mark.slow
async def test_service_killed_mid_stream_loses_no_acknowledged_run(server_dir: Path) -> None:
    """kill -9 the service; a new one on the same servers heals what was logged, not applied."""
    name = "service-kill"
    began = time.monotonic()
    async with deployment(server_dir) as d:
        ledger = Ledger()
        stop = asyncio.Event()
        load = asyncio.create_task(stream(d.http, d.board, ledger, seconds=25, stop=stop))
        try:
            await wait_acked(ledger, 1500, within_s=7)
            await asyncio.to_thread(d.kill_service)
            killed_after = len(ledger.acked)
            await asyncio.sleep(0.3)
            restart_s = await d.start_service()
            restarted_at = time.monotonic()
            await asyncio.sleep(2)
        finally:
            stop.set()
            await load
        after = sum(1 for s in ledger.acked.values() if s.t0 >= restarted_at)
        print(
            f"\n[{name}] killed after {killed_after} acks; new service ready {restart_s:.1f}s "
            f"later; {after} acks after that"
        )
        await recover_and_check(name, d, ledger, within_s=20)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


@pytest.mark.slow
async def test_postgres_down_for_10s_submits_keep_succeeding_and_the_copy_catches_up(
    server_dir: Path,
) -> None:
    """PostgreSQL is not on the submit path; the log consumer fills player_best afterwards."""
    name = "postgres-outage"
    began = time.monotonic()
    failures: list[str] = []
    async with deployment(server_dir) as d:
        ledger = Ledger()
        load = asyncio.create_task(stream(d.http, d.board, ledger, seconds=16, count=20_000))
        postgres = d.servers.postgres
        assert postgres is not None
        try:
            await wait_acked(ledger, 300, within_s=5)
            stopping = time.monotonic()
            await asyncio.to_thread(postgres.stop)
            down = time.monotonic()
            await asyncio.sleep(1)
            # what does need PostgreSQL says so with a 503, never a 500
            listing = await d.http.get("/v1/boards")
            assert listing.status_code == 503, listing.text
            assert listing.json()["error"]["code"] == "unavailable"
            await asyncio.sleep(9)
            await asyncio.to_thread(postgres.start)
            up = time.monotonic()
        finally:
            await load
        # The board config is cached for 2 s; past that the service must keep serving the
        # stale config rather than wait for PostgreSQL.
        late = [s for s in ledger.acked.values() if s.t0 >= down + 3 and s.t1 <= up]
        during = [s for s in ledger.acked.values() if s.t0 >= down and s.t1 <= up]
        slowest = max(ledger.acked.values(), key=lambda s: s.t1 - s.t0)
        print(
            f"\n[{name}] PostgreSQL stopped in {down - stopping:.1f}s, down {up - down:.1f}s; "
            f"acked entirely during the outage: {len(during)}, of them begun 3+ s into it: "
            f"{len(late)}; slowest ack {slowest.t1 - slowest.t0:.1f}s "
            f"(sent {slowest.t0 - down:+.1f}s after the stop)"
        )
        if ledger.unavailable or ledger.unknown or ledger.rejected:
            failures.append(f"submits failed around the PostgreSQL outage: {ledger.summary()}")
        if not late:
            failures.append(
                "no submit begun 3+ s into the PostgreSQL outage (past the 2 s config cache) "
                "was answered before PostgreSQL came back: submits stall while it is down"
            )
        if slowest.t1 - slowest.t0 > 5:
            failures.append(f"a submit took {slowest.t1 - slowest.t0:.1f}s during the outage")

        try:
            caught_up_s = await wait_consumer_idle(d.http, within_s=30)
            print(f"[{name}] log consumer caught up {caught_up_s:.1f}s after the outage ended")
        except AssertionError as exc:
            failures.append(str(exc))
        deadline = time.monotonic() + 10
        while True:
            best = await pg_best_at(d.servers.postgres_url, d.board)
            copy = {
                player: row[1] for (window, _, player), row in best.items() if window == "all-time"
            }
            on_redis = scores(await read_top(d.http, d.board, "all-time", "all-time"))
            if copy == on_redis or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        differ = sorted(p for p in set(copy) | set(on_redis) if copy.get(p) != on_redis.get(p))
        print(f"[{name}] player_best vs Redis all-time: {len(differ)} of {len(on_redis)} differ")
        if differ:
            rows = [(p, copy.get(p), on_redis.get(p)) for p in differ[:10]]
            failures.append(f"player_best != Redis (player, pg, redis): {rows}")
        await recover_and_check(name, d, ledger, within_s=10, failures=failures)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


@pytest.mark.slow
async def test_nats_down_refuses_runs_with_503_and_recovers(server_dir: Path) -> None:
    """No log, no acceptance: 503 unavailable, nothing reaches the boards; back when NATS is."""
    name = "nats-outage"
    began = time.monotonic()
    async with deployment(server_dir, RANKD_PUBLISH_TIMEOUT_S="1") as d:
        ledger = Ledger()
        stop = asyncio.Event()
        load = asyncio.create_task(
            stream(d.http, d.board, ledger, seconds=30, count=20_000, stop=stop)
        )
        nats_server = d.servers.nats
        assert nats_server is not None
        outage = Ledger()
        outage_players = [f"down{i:03d}" for i in range(40)]
        recovered_s: float | None = None
        try:
            await wait_acked(ledger, 300, within_s=5)
            await asyncio.to_thread(nats_server.stop)
            # NATS is down: every run now is refused, and none of them may show up anywhere.
            await stream(
                d.http,
                d.board,
                outage,
                seconds=3,
                players=outage_players,
                workers=3,
                prefix="down",
            )
            await asyncio.to_thread(nats_server.start)
            restarted = time.monotonic()
            # Back within a few seconds: poll with single submits (filed in the main ledger).
            while time.monotonic() - restarted < 15:
                player = random.choice(PLAYERS)
                score = random.randint(0, MAX_RUN_SCORE)
                status = await submit_one(d.http, d.board, ledger, player, score, "probe")
                if status is not None and 200 <= status < 300:
                    recovered_s = time.monotonic() - restarted
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(2)  # the background stream runs on after recovery
        finally:
            stop.set()
            await load
        slowest = max((s.t1 - s.t0 for s in outage.unavailable.values()), default=0.0)
        recovered = "never" if recovered_s is None else f"{recovered_s:.1f}s"
        print(
            f"\n[{name}] while NATS was down: {outage.summary()} (slowest 503 {slowest:.2f}s); "
            f"submits succeeded again {recovered} after NATS restarted"
        )
        sent = len(list(outage.all_sent()))
        assert sent > 0
        assert outage.outcomes == Counter({"503:unavailable": sent}), outage.summary()
        assert slowest < 5, f"a refusal took {slowest:.1f}s with a 1 s publish timeout"
        assert recovered_s is not None and recovered_s < 10, f"recovered after {recovered}"

        logged = await recover_and_check(name, d, ledger, within_s=15, absent=outage_players)
        leaked = set(outage.all_sent_ids()) & logged
        assert not leaked, f"refused runs were logged anyway: {sorted(leaked)[:5]}"
        idle_s = await wait_consumer_idle(d.http, within_s=20)
        print(f"[{name}] log consumer idle after NATS came back ({idle_s:.1f}s after the check)")
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


async def snapshot(
    d: Deployment, wps: Iterable[WindowPeriod]
) -> tuple[dict[WindowPeriod, list[dict[str, Any]]], PgBest]:
    boards = await read_boards(d.http, d.board, wps)
    return boards, await pg_best_at(d.servers.postgres_url, d.board)


def run_replay(d: Deployment) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "rankd.cli", "replay"],
        env=d.env | {"COLUMNS": "120"},
        cwd=d.dir,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, f"rankd replay failed:\n{done.stdout}\n{done.stderr}"
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("replayed")]
    return lines[-1] if lines else done.stdout.strip()[-200:]


@pytest.mark.slow
async def test_replaying_the_whole_log_twice_changes_nothing(server_dir: Path) -> None:
    """`rankd replay` of every message, twice: every board and player_best row unchanged."""
    name = "replay-twice"
    began = time.monotonic()
    async with deployment(server_dir) as d:
        ledger = Ledger()
        await stream(d.http, d.board, ledger, seconds=6, count=2000)
        await wait_consumer_idle(d.http, within_s=20)
        assert not list(ledger.maybe()), ledger.summary()
        wps = {wp for run in ledger.all_sent() for wp in periods_of(run)}
        before = await snapshot(d, wps)
        assert {(w, p) for w, p, *_ in before[1]} == wps, "player_best lacks a period"
        for attempt in (1, 2):
            report = await asyncio.to_thread(run_replay, d)
            print(f"\n[{name}] replay {attempt}: {report}")
            after = await snapshot(d, wps)
            for wp in sorted(wps):
                assert after[0][wp] == before[0][wp], f"replay {attempt} changed {wp}"
            assert after[1] == before[1], f"replay {attempt} changed player_best"
        await recover_and_check(name, d, ledger, within_s=5)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


@pytest.mark.slow
async def test_script_flush_during_a_stream_fails_no_submit(server_dir: Path) -> None:
    """Redis forgets its scripts (SCRIPT FLUSH) repeatedly: submits reload them, none fails."""
    name = "script-flush"
    began = time.monotonic()
    async with deployment(server_dir) as d:
        ledger = Ledger()
        load = asyncio.create_task(stream(d.http, d.board, ledger, seconds=8, count=4000))
        flushes = 0
        redis = Redis.from_url(d.servers.redis_url)
        try:
            await wait_acked(ledger, 100, within_s=5)
            while not load.done() and flushes < 10:
                await redis.script_flush()
                flushes += 1
                await asyncio.sleep(0.5)
        finally:
            await redis.aclose()
            await load
        print(f"\n[{name}] SCRIPT FLUSH x{flushes} during the stream")
        assert flushes >= 5
        assert set(ledger.outcomes) == {"200"}, f"failed submits: {ledger.summary()}"
        await recover_and_check(name, d, ledger, within_s=10)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")


@pytest.mark.slow
async def test_ready_only_once_reads_reflect_every_acknowledged_run_after_an_outage_and_restart(
    server_dir: Path,
) -> None:
    """Runs acknowledged while PostgreSQL is down are only in Redis and the log. Then the
    service and Redis die (Redis wiped), PostgreSQL comes back and a new service starts:
    its rebuild from PostgreSQL lacks those runs until the log's tail is applied, so
    /readyz must stay 503 until then, and the moment it is 200 every one is readable."""
    name = "ready-while-wrong"
    began = time.monotonic()
    async with deployment(server_dir) as d:
        postgres, redis = d.servers.postgres, d.servers.redis
        assert postgres is not None and redis is not None
        ledger = Ledger()
        await stream(d.http, d.board, ledger, seconds=1, count=300)
        await asyncio.to_thread(postgres.stop)
        await stream(d.http, d.board, ledger, seconds=3, count=3000)
        outage = len(ledger.acked)
        await asyncio.to_thread(d.kill_service)
        await asyncio.to_thread(redis.kill)
        wipe(redis.directory)
        await asyncio.to_thread(redis.start)
        await asyncio.to_thread(postgres.start)
        started = time.monotonic()
        d.processes.append(d._spawn())
        states: Counter[int] = Counter()
        while True:
            assert time.monotonic() - started < 60, f"not ready:\n{d.service_log()}"
            assert d.service.poll() is None, d.service_log()
            try:
                response = await d.http.get("/readyz", timeout=2)
            except httpx.HTTPError:
                await asyncio.sleep(0.05)
                continue
            states[response.status_code] += 1
            if response.status_code == 200:
                break
            if response.status_code == 503 and states[503] == 1:
                print(f"\n[{name}] first 503 while starting: {response.json().get('recovering')}")
            await asyncio.sleep(0.05)
        ready_s = time.monotonic() - started
        # at once, no settling: ready means every acknowledged run is readable
        verdict = await check(d.http, d.board, ledger)
        print(
            f"[{name}] {outage} acked, of them during the outage: "
            f"{outage - 300 if outage > 300 else outage}; /readyz answers {dict(states)}; "
            f"ready {ready_s:.1f}s after the start; at that moment {verdict.line()}"
        )
        assert not verdict.lost, f"ready while {len(verdict.lost)} acknowledged runs are missing"
        await recover_and_check(name, d, ledger, within_s=10)
    print(f"[{name}] took {time.monotonic() - began:.1f}s")
