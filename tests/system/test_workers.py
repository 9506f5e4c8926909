"""Several processes, one answer: `rankd serve --workers 2` (each process with its own log
consumer) answers every submit as a single process would.

The log consumer of one process used to apply a run to Redis before the process that took
the submit did, which then saw no change and answered ``improved: false`` for a new best.
Now the submit path marks what it applied and the consumers leave marked runs alone in
Redis (services/applier.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from rankd import metrics
from rankd.embedded import free_port
from rankd.runs import Run, encode_message
from rankd.runtime import Runtime
from tests.support.common import ADMIN, ADMIN_H, SERVER, SERVER_H, MakeBoard, Urls, new_board_id
from tests.support.durable import wait_consumer_idle

# a line of the service's log (rankd/logs.py): time, level, logger, then the message
LOG_LINE = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+ .*"
)
ACCEPTED = re.compile(r'rankd_runs_accepted_total\{endpoint="([^"]+)"\} (\S+)')

pytestmark = pytest.mark.slow


def spawn(port: int, env: dict[str, str], log: Any, workers: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "rankd.cli", "serve", "--port", str(port)]
    return subprocess.Popen(
        [*command, "--workers", str(workers)], env=env, stdout=log, stderr=subprocess.STDOUT
    )


@contextlib.asynccontextmanager
async def two_workers(
    urls: Urls,
    log_dir: Path,
    *,
    workers: int = 2,
    log_level: str = "warning",
    env: dict[str, str] | None = None,
) -> AsyncIterator[httpx.AsyncClient]:
    port = free_port()
    service_env = {
        **os.environ,
        "RANKD_REDIS_URL": urls.redis,
        "RANKD_POSTGRES_URL": urls.postgres,
        "RANKD_NATS_URL": urls.nats,
        "RANKD_ADMIN_KEYS": ADMIN,
        "RANKD_SERVER_KEYS": SERVER,
        "RANKD_LOG_LEVEL": log_level,
        "RANKD_SEASON_JOB_INTERVAL_S": "0",
    } | (env or {})
    log = (log_dir / "serve.log").open("wb")
    process = spawn(port, service_env, log, workers)
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=30
        ) as http:
            deadline = time.monotonic() + 60
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get("/readyz", timeout=2)).status_code == 200:
                        break
                assert process.poll() is None, (log_dir / "serve.log").read_text()
                assert time.monotonic() < deadline, "rankd serve --workers 2 did not start"
                await asyncio.sleep(0.2)
            yield http
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


async def test_every_new_best_says_improved_with_two_worker_processes(
    urls: Urls, tmp_path: Path
) -> None:
    rng = random.Random(12)
    players = [f"w{i}" for i in range(300)]
    async with two_workers(urls, tmp_path) as http:
        board = new_board_id("workers")
        config = {"windows": ["all-time", "daily", "weekly", "rolling-7d"]}
        response = await http.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)
        assert response.status_code == 201, response.text
        wrong: list[dict[str, Any]] = []
        answers = 0

        async def play(player: str) -> None:
            nonlocal answers
            score = 0
            for n in range(5):  # every run a new best, sent after the last one answered
                score += rng.randint(1, 1000)
                body = {"run_id": f"{player}-{n}", "player_id": player, "score": score}
                response = await http.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
                assert response.status_code == 200, response.text
                for standing in response.json()["standings"]:
                    answers += 1
                    if not (standing["improved"] and standing["is_best"]):
                        wrong.append({"run": body, "standing": standing})

        groups = [players[i::50] for i in range(50)]

        async def serial(group: list[str]) -> None:
            for player in group:
                await play(player)

        await asyncio.gather(*(serial(g) for g in groups))
        assert answers == 300 * 5 * 4
        assert wrong == [], f"{len(wrong)} of {answers} answers: {wrong[:5]}"
        # every run ended today: the last seven days stand as all-time does
        tops = [
            (await http.get(f"/v1/boards/{board}/top", params={"n": 300, "window": w})).json()
            for w in ("all-time", "rolling-7d")
        ]
        assert [e["player_id"] for e in tops[0]["entries"]] == [
            e["player_id"] for e in tops[1]["entries"]
        ]
        assert len(tops[1]["entries"]) == 300


async def test_the_consumer_applies_a_run_no_submitter_applied(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime
) -> None:
    """A run in the log that no submit path applied (its process died after the ack) has no
    mark: the consumer applies it to Redis once it is older than the mark wait."""
    board = await make_board(windows=["all-time"])
    now = int(time.time() * 1000)
    orphan = Run("orphan-1", "orphan", 77, now, now)
    # logged, never applied by a submitter
    await runtime.runlog.publish(board, encode_message(board, [orphan]), "orphan-1")
    started = time.monotonic()
    while time.monotonic() - started < runtime.settings.consumer_mark_wait_s + 10:
        response = await client.get(f"/v1/boards/{board}/players/orphan")
        if response.status_code == 200:
            break
        await asyncio.sleep(0.05)
    assert response.status_code == 200, response.text
    assert response.json()["score"] == 77


async def test_the_consumer_leaves_what_the_submit_path_marked(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime
) -> None:
    board = await make_board(windows=["all-time", "daily"], segments=["country"])
    # The counter is process-wide: let the runtime's consumer finish what earlier tests
    # logged before taking the baseline, or their skips count here.
    await wait_consumer_idle(client, runtime)
    before = metrics.TARGETS_ALREADY_APPLIED._value.get()
    for i in range(10):
        body = {"run_id": f"m{i}", "player_id": f"p{i}", "score": i, "segments": {"country": "FR"}}
        response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
        assert response.status_code == 200
    await wait_consumer_idle(client, runtime)
    # 10 runs x 2 windows x (global + country:FR), none written to Redis a second time
    assert metrics.TARGETS_ALREADY_APPLIED._value.get() - before == 40


class SlowPublish:
    """The run log, publishing after ``before_s`` and answering ``after_s`` later (a log
    electing its leader, then a slow ack)."""

    def __init__(self, log: Any, before_s: float, after_s: float) -> None:
        self.log, self.before_s, self.after_s = log, before_s, after_s

    async def publish(self, board_id: str, payload: bytes, msg_id: str) -> int:
        await asyncio.sleep(self.before_s)
        seq: int = await self.log.publish(board_id, payload, msg_id)
        await asyncio.sleep(self.after_s)
        return seq


async def test_a_run_published_slowly_is_still_left_to_its_submitter(
    client: httpx.AsyncClient,
    make_board: MakeBoard,
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The consumer waits for a run's mark counting from when the log stored it, not only
    from the run's receipt: a publish slower than the mark wait left the consumer to write
    the run first, and its submitter answered "not improved" for a new best."""
    board = await make_board(windows=["all-time"])
    await wait_consumer_idle(client, runtime)
    before = metrics.TARGETS_ALREADY_APPLIED._value.get()
    committer = runtime.submitter.committer
    wait_s = runtime.settings.consumer_mark_wait_s
    monkeypatch.setattr(committer, "runlog", SlowPublish(committer.runlog, wait_s + 0.5, 0.5))
    body = {"run_id": "slow-1", "player_id": "slow", "score": 5}
    response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    [standing] = response.json()["standings"]
    assert (standing["score"], standing["improved"]) == (5, True)
    await wait_consumer_idle(client, runtime)
    assert metrics.TARGETS_ALREADY_APPLIED._value.get() - before == 1  # left to the submitter


@pytest.mark.parametrize("workers", [1, 2])
async def test_workers_log_alike_and_one_scrape_shows_the_whole_service(
    urls: Urls, tmp_path: Path, workers: int
) -> None:
    """With N workers every request has its access line, every line its time, level and
    logger, and /metrics sums every worker's counts, whichever worker takes the scrape."""
    runs = 40
    async with two_workers(urls, tmp_path, workers=workers, log_level="info") as http:
        board = new_board_id("scrape")
        response = await http.put(
            f"/v1/boards/{board}", json={"windows": ["all-time"]}, headers=ADMIN_H
        )
        assert response.status_code == 201, response.text
        base = str(http.base_url)

        async def scrape() -> float:
            # a connection of its own each time, so the scrapes land on either worker
            async with httpx.AsyncClient(base_url=base, timeout=30) as fresh:
                text = (await fresh.get("/metrics")).text
            return sum(float(v) for e, v in ACCEPTED.findall(text) if e == "single")

        before = await scrape()  # an earlier test's runs, should the servers be shared

        async def submit(n: int) -> None:
            # each on its own connection, sent together, so both workers take some
            async with httpx.AsyncClient(base_url=base, timeout=30) as fresh:
                body = {"run_id": f"s{n}", "player_id": f"p{n}", "score": n}
                response = await fresh.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
                assert response.status_code == 200, response.text

        await asyncio.gather(*(submit(n) for n in range(runs)))
        # several scrapes, on new connections: each must see all 40 runs
        seen = [await scrape() - before for _ in range(8)]
        assert seen == [runs] * 8, seen
    text = (tmp_path / "serve.log").read_text()
    lines = [line for line in text.splitlines() if line.strip()]
    bare = [line for line in lines if not LOG_LINE.fullmatch(line)]
    assert bare == [], bare[:5]
    posted = [
        line for line in lines if f" INFO rankd.access POST /v1/boards/{board}/runs 200 " in line
    ]
    assert len(posted) == runs, text[-3000:]


async def test_tokens_cursors_and_player_streams_across_two_workers(
    urls: Urls, tmp_path: Path
) -> None:
    """v1.3 from outside, with every request on a new connection (so on either process):
    a cursor made by one process pages on in the other (one signing secret, from
    PostgreSQL), a token minted by one is honoured by the other, and a player stream held
    by one process hears of a submit the other took."""
    secret = "workers-token-secret-0123456789abcdef"
    fresh = {"Connection": "close"}
    async with two_workers(urls, tmp_path, env={"RANKD_PLAYER_TOKEN_SECRET": secret}) as http:
        board = new_board_id("w13")
        config = {"client_submits": True}
        assert (await http.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)).is_success
        runs = [
            {"run_id": f"s{i}", "player_id": f"s{i:02d}", "score": i, "metadata": {"i": i}}
            for i in range(60)
        ]
        seeded = await http.post(
            f"/v1/boards/{board}/runs:batch", json={"runs": runs}, headers=SERVER_H
        )
        assert seeded.status_code == 200, seeded.text
        for _ in range(2):  # either process finds every entry's metadata
            whole = await http.get(
                f"/v1/boards/{board}/top",
                params={"n": 60, "include": "metadata"},
                headers=fresh,
            )
            assert [e["metadata"] for e in whole.json()["entries"]] == [
                {"i": i} for i in reversed(range(60))
            ]

        seen: list[str] = []
        params: dict[str, Any] = {"n": 7}
        while True:
            page = await http.get(f"/v1/boards/{board}/top", params=params, headers=fresh)
            assert page.status_code == 200, page.text
            seen += [e["player_id"] for e in page.json()["entries"]]
            if page.json()["next_cursor"] is None:
                break
            params = {"n": 7, "cursor": page.json()["next_cursor"]}
        assert seen == [f"s{i:02d}" for i in reversed(range(60))]

        minted = await http.post(
            "/v1/players/wme/tokens", json={"scope": ["read", "submit"]}, headers=SERVER_H
        )
        token = {"Authorization": f"Bearer {minted.json()['token']}", **fresh}
        stream_headers = {"Authorization": token["Authorization"]}
        path = f"/v1/players/wme/events?boards={board}"
        async with http.stream("GET", path, headers=stream_headers) as events:
            assert events.status_code == 200
            lines = events.aiter_lines()
            # each submit on a new connection, each moving the player (35th, 15th, 1st)
            for n, score in enumerate((25, 45, 100)):
                body = {
                    "run_id": f"me{n}",
                    "player_id": "wme",
                    "score": score,
                    "metadata": {"try": n},
                }
                sent = await http.post(f"/v1/boards/{board}/runs", json=body, headers=token)
                assert sent.status_code == 200, sent.text
                rank = sent.json()["standings"][0]["rank"]
                async with asyncio.timeout(10):
                    async for line in lines:
                        if line.startswith("data:") and f'"rank":{rank},' in line:
                            break
            mine = await http.get(
                f"/v1/boards/{board}/players/wme", params={"include": "metadata"}, headers=token
            )
            assert mine.status_code == 200 and mine.json()["rank"] == 1
            assert mine.json()["metadata"] == {"try": 2}


async def test_a_capped_tournament_across_two_workers(urls: Urls, tmp_path: Path) -> None:
    """Joins racing over both processes (each request on a new connection) leave exactly
    the cap's entrants; a run's attempts are counted across them too."""
    fresh = {"Connection": "close", **SERVER_H}
    async with two_workers(urls, tmp_path) as http:
        board = new_board_id("w13t")
        start = (datetime.now(UTC) - timedelta(minutes=1)).replace(second=0, microsecond=0)
        config = {
            "windows": ["all-time"],
            "schedule": {"starts_at": start.isoformat(), "every": "P1D", "duration": "PT2H"},
            "join_required": True,
            "max_entrants": 7,
            "max_attempts": 2,
        }
        assert (await http.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)).is_success
        joins = await asyncio.gather(
            *(
                http.post(f"/v1/boards/{board}/players/t{i:02d}/join", headers=fresh)
                for i in range(60)
            )
        )
        joined = [i for i, r in enumerate(joins) if r.status_code == 200]
        assert len(joined) == 7, [r.status_code for r in joins]
        player = f"t{joined[0]:02d}"
        statuses = []
        for n in range(4):
            body = {"run_id": f"tr{n}", "player_id": player, "score": n}
            sent = await http.post(f"/v1/boards/{board}/runs", json=body, headers=fresh)
            statuses.append(sent.json()["standings"][-1]["status"])
        assert statuses == ["ranked", "ranked", "attempts_exhausted", "attempts_exhausted"]


async def test_a_league_placed_from_two_workers(urls: Urls, tmp_path: Path) -> None:
    """First runs racing over both processes (each request on a new connection) fill each
    cohort exactly once, and either process reads the same cohorts."""
    fresh = {"Connection": "close", **SERVER_H}
    async with two_workers(urls, tmp_path) as http:
        board = new_board_id("w13l")
        league = {"window": "daily", "tiers": ["bronze", "silver"], "cohort_size": 10}
        config = {"windows": ["daily", "all-time"], "league": league}
        assert (await http.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)).is_success
        sent = await asyncio.gather(
            *(
                http.post(
                    f"/v1/boards/{board}/runs",
                    json={"run_id": f"lr{i}", "player_id": f"l{i:02d}", "score": i},
                    headers=fresh,
                )
                for i in range(60)
            )
        )
        assert all(r.status_code == 200 for r in sent), [r.text for r in sent]
        seen: dict[str, str] = {}
        for n in range(1, 7):
            reads = await asyncio.gather(
                *(
                    http.get(f"/v1/boards/{board}/cohorts/bronze-{n}", headers=fresh)
                    for _ in range(4)
                )
            )
            bodies = [r.json()["entries"] for r in reads]
            assert all(b == bodies[0] for b in bodies)  # both processes answer alike
            assert len(bodies[0]) == 10
            for entry in bodies[0]:
                assert entry["player_id"] not in seen
                seen[entry["player_id"]] = f"bronze-{n}"
        assert len(seen) == 60
        mine = await http.get(f"/v1/boards/{board}/players/l07/league", headers=fresh)
        assert mine.json()["cohort"] == seen["l07"]
