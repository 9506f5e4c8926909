"""`rankd backup` and `rankd restore` as an operator runs them, beside a real `rankd serve`:
a backup taken while runs keep coming, restored into a new data dir (the log lost with the
machine: every read as at the backup) and into a data dir whose PostgreSQL was lost (the
log kept: every acknowledged run, the later ones included)."""

from __future__ import annotations

import json
import re
import shutil
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.system.test_cli import ADMIN, SERVER, assert_refused, rankd, start

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BOARDS: dict[str, dict[str, Any]] = {
    "bk-best": {"windows": ["all-time", "weekly"], "segments": ["country"], "hold_top": 1},
    "bk-sum": {"windows": ["all-time"], "policy": "sum"},
    "bk-daily": {"windows": ["daily"], "grace_seconds": 0},
    "bk-load": {"windows": ["all-time"]},
    "bk-league": {
        "windows": ["daily"],
        "league": {"window": "daily", "tiers": ["bronze", "silver"], "cohort_size": 5},
    },
}


def set_up(base: str) -> None:
    """Boards, runs, names, a ban, a held run and an archived period."""
    with httpx.Client(base_url=base, timeout=10) as http:
        for board, config in BOARDS.items():
            put = http.put(f"/v1/boards/{board}", json=config, headers=ADMIN)
            assert put.status_code == 201, put.text
        for n in range(20):
            run = {"run_id": f"b{n}", "player_id": f"p{n}", "score": 100 + n}
            assert http.post("/v1/boards/bk-sum/runs", json=run, headers=SERVER).is_success
        two_days_ago = (datetime.now(UTC) - timedelta(days=2)).isoformat()
        for n in range(5):
            run = {"run_id": f"d{n}", "player_id": f"p{n}", "score": n, "ended_at": two_days_ago}
            assert http.post("/v1/boards/bk-daily/runs", json=run, headers=SERVER).is_success
        runs = [
            {"run_id": f"r{n}", "player_id": f"p{n}", "score": 10 + n,
             "segments": {"country": "FR" if n % 2 else "DE"}}
            for n in range(20)
        ]  # fmt: skip
        batch = http.post("/v1/boards/bk-best/runs:batch", json={"runs": runs}, headers=SERVER)
        assert batch.is_success, batch.text
        # above the board's top 1 (hold_top): held for review
        top = {"run_id": "held", "player_id": "p3", "score": 10_000}
        assert http.post("/v1/boards/bk-best/runs", json=top, headers=SERVER).is_success
        for n in range(3):
            name = http.put(f"/v1/players/p{n}", json={"name": f"name {n}"}, headers=SERVER)
            assert name.is_success, name.text
        assert http.post("/v1/players/p7/ban", headers=ADMIN).is_success
        for n in range(8):  # two cohorts, placed in this order
            run = {"run_id": f"l{n}", "player_id": f"p{n}", "score": (n * 7) % 10}
            assert http.post("/v1/boards/bk-league/runs", json=run, headers=SERVER).is_success


def settle(base: str) -> None:
    """Until the durable copy has every acknowledged run (the consumer's lag is zero)."""
    with httpx.Client(base_url=base, timeout=10) as http:
        for _ in range(300):
            ready = http.get("/readyz").json()
            lag = ready.get("consumer", {})
            if (
                ready.get("status") == "ready"
                and not lag.get("pending")
                and not lag.get("ack_pending")
            ):
                return
            threading.Event().wait(0.2)
    raise AssertionError(f"the consumer did not catch up: {ready}")


def reads(base: str) -> dict[str, Any]:
    """Every read the backup must bring back, by path."""
    daily = (datetime.now(UTC) - timedelta(days=2)).strftime("%Y-%m-%d")
    paths = [
        "/v1/boards",
        "/v1/bans",
        "/v1/boards/bk-best/holds",
        "/v1/boards/bk-best/top?n=100",
        "/v1/boards/bk-best/top?n=100&window=weekly",
        "/v1/boards/bk-best/top?n=100&segment=FR",
        "/v1/boards/bk-best/top?n=100&viewer=p7",
        "/v1/boards/bk-best/players/p2",
        "/v1/boards/bk-best/around/p5",
        "/v1/boards/bk-sum/top?n=100",
        "/v1/boards/bk-load/top?n=100",
        f"/v1/boards/bk-daily/top?n=100&period={daily}",
        "/v1/boards/bk-daily/periods",
        "/v1/players/p1",
        "/v1/players/p7",
        "/v1/boards/bk-league/players/p6/league",
        "/v1/boards/bk-league/cohorts/bronze-1",
        "/v1/players/p2/leagues?board=bk-league",
    ]
    with httpx.Client(base_url=base, timeout=10) as http:
        answers = {}
        for path in paths:
            response = http.get(path, headers=ADMIN)
            answers[path] = (response.status_code, response.json())
    return answers


def assert_same(now: dict[str, Any], then: dict[str, Any]) -> None:
    differing = {path: (then[path], now[path]) for path in then if now[path] != then[path]}
    assert not differing, json.dumps(differing, indent=1)


class Load(threading.Thread):
    """Runs sent one after another until stopped; remembers each acknowledged one."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.acked: dict[str, int] = {}  # player -> best acknowledged score
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        with httpx.Client(base_url=self.base, timeout=10) as http:
            while not self.stop.is_set():
                player, score = f"w{n % 50}", 1 + n
                run = {"run_id": f"w-{n}", "player_id": player, "score": score}
                if http.post("/v1/boards/bk-load/runs", json=run, headers=SERVER).is_success:
                    self.acked[player] = score
                n += 1


def test_a_backup_under_load_restores_as_it_was_and_with_the_logs_later_runs(
    server_dir: Path,
) -> None:
    from tests.support.live import free_port

    first, second = server_dir / "first", server_dir / "second"
    quiet, busy = server_dir / "backup-quiet", server_dir / "backup-busy"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    service = start(first, port)
    try:
        set_up(base)
        settle(base)
        frozen = rankd("freeze", "--data-dir", str(first))
        assert frozen.returncode == 0, frozen.stderr
        at_backup = reads(base)
        assert at_backup["/v1/boards/bk-best/holds"][1]["holds"], "no held run to restore"
        league = at_backup["/v1/boards/bk-league/players/p6/league"]
        assert league[0] == 200 and league[1]["cohort"] == "bronze-2", league  # placements too
        done = rankd("backup", str(quiet), "--data-dir", str(first))
        assert done.returncode == 0, done.stderr
        assert "covers the log through sequence" in done.stdout
        assert_refused(rankd("backup", str(quiet), "--data-dir", str(first)), "not an empty")

        load = Load(base)
        load.start()
        threading.Event().wait(1.0)
        done = rankd("backup", str(busy), "--data-dir", str(first))
        assert done.returncode == 0, done.stderr
        threading.Event().wait(1.0)
        load.stop.set()
        load.join(30)
        settle(base)
        with_later = reads(base)
    finally:
        service.terminate()
        service.wait(60)
    assert len(load.acked) == 50

    # a new machine: a new data dir, an empty log; everything as at the quiet backup
    restored = rankd("restore", str(quiet), "--data-dir", str(second))
    assert restored.returncode == 0, restored.stderr
    assert "the empty log continues at sequence" in restored.stdout
    service = start(second, port)
    try:
        assert_same(reads(base), at_backup)
        # new runs go on, past the backup's sequences
        run = {"run_id": "after", "player_id": "new", "score": 1}
        with httpx.Client(base_url=base, timeout=10) as http:
            assert http.post("/v1/boards/bk-sum/runs", json=run, headers=SERVER).is_success
        # a restore into a database that holds data changes nothing
        refused = rankd("restore", str(quiet), "--data-dir", str(second))
        assert refused.returncode == 3 and "already holds tables" in refused.stderr
    finally:
        service.terminate()
        service.wait(60)

    # PostgreSQL lost, the log kept: the busy backup, then every later run from the log
    shutil.rmtree(first / "postgres")
    restored = rankd("restore", str(busy), "--data-dir", str(first))
    assert restored.returncode == 0, restored.stderr
    later = re.search(r"then (\d+) later log messages", restored.stdout)
    assert later and int(later[1]) > 0, restored.stdout
    service = start(first, port)
    try:
        settle(base)
        assert_same(reads(base), with_later)
        top = reads(base)["/v1/boards/bk-load/top?n=100"][1]["entries"]
        best = {e["player_id"]: e["score"] for e in top}
        assert best == load.acked
    finally:
        service.terminate()
        service.wait(60)


def test_restore_refuses_a_folder_without_a_backup(server_dir: Path) -> None:
    empty = server_dir / "nothing"
    empty.mkdir()
    assert_refused(rankd("restore", str(empty), "--data-dir", str(server_dir / "d")), "no Rankd")
    bad = server_dir / "bad"
    bad.mkdir()
    (bad / "rankd-backup.json").write_text("{not json")
    assert_refused(rankd("restore", str(bad), "--data-dir", str(server_dir / "d")), "not a Rankd")
