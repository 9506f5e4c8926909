"""`rankd serve` as a user runs it: a real process on embedded servers, stopped by signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rankd.embedded import free_port

ADMIN = {"Authorization": "Bearer cli-admin"}
SERVER = {"Authorization": "Bearer cli-server"}


def server_pids(data_dir: Path) -> list[int]:
    files = [
        data_dir / "redis" / "rankd-embedded.pid",
        data_dir / "nats" / "rankd-embedded.pid",
        data_dir / "postgres" / "postmaster.pid",
    ]
    return [int(f.read_text().split()[0]) for f in files]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def start(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKD_")}
    env |= {"RANKD_ADMIN_KEYS": "cli-admin", "RANKD_SERVER_KEYS": "cli-server"}
    env["RANKD_LOG_LEVEL"] = "warning"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rankd.cli",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        env=env,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert process.poll() is None, "rankd serve exited during start"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.kill()
    raise AssertionError("rankd serve did not become ready")


def wait_gone(pids: list[int], within_s: float = 30) -> None:
    deadline = time.monotonic() + within_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)], "embedded servers outlived rankd serve"


@pytest.mark.slow
def test_serve_runs_the_contract_example_keeps_data_and_leaves_no_orphans(
    server_dir: Path,
) -> None:
    data_dir = server_dir / "data"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start(data_dir, port)
    try:
        created = httpx.put(
            f"{base}/v1/boards/arena", json={"windows": ["all-time"]}, headers=ADMIN
        )
        assert created.status_code == 201
        run = {"run_id": "r-7f3a91", "player_id": "48213377", "score": 1284500}
        submitted = httpx.post(f"{base}/v1/boards/arena/runs", json=run, headers=SERVER)
        assert submitted.status_code == 200
        assert submitted.json()["standings"][0]["rank"] == 1
        pids = server_pids(data_dir)
        assert all(alive(p) for p in pids)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    wait_gone(pids)

    # Data survives a restart; a SIGKILLed service's orphans are reclaimed by the next start.
    process = start(data_dir, port)
    try:
        top = httpx.get(f"{base}/v1/boards/arena/top").json()
        assert [e["player_id"] for e in top["entries"]] == ["48213377"]
        pids = server_pids(data_dir)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    process = start(data_dir, port)
    try:
        wait_gone(pids)
        top = httpx.get(f"{base}/v1/boards/arena/top").json()
        assert top["total"] == 1
        pids = server_pids(data_dir)
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0
    wait_gone(pids)
