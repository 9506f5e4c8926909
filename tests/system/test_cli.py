"""The `rankd` command as a user runs it: `rankd serve` as a real process on embedded servers,
stopped by signals; what it refuses (a busy port, a data dir in use) before starting
anything; `rankd rebuild|replay|freeze` on a folder without data; `make run`'s options."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rankd import datadir
from rankd.embedded import free_port
from tests.support.common import Urls

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


ROOT = Path(__file__).resolve().parents[2]


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKD_")}
    env |= {"RANKD_ADMIN_KEYS": "cli-admin", "RANKD_SERVER_KEYS": "cli-server"}
    env["RANKD_LOG_LEVEL"] = "warning"
    return env


def rankd(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rankd.cli", *args],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    """Refused with one line on stderr naming ``words``, no traceback, nothing started."""
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "starting embedded" not in result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def start(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = cli_env()
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
        # a second serve on the same data dir names the first and starts nothing
        second = rankd("serve", "--port", str(free_port()), "--data-dir", str(data_dir))
        assert_refused(second, str(data_dir.resolve()), f"pid {process.pid}", "--data-dir")
        assert server_pids(data_dir) == pids
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

    # rebuild on the stopped service's data dir finds its data (and starts its servers)
    rebuilt = rankd("rebuild", "--data-dir", str(data_dir))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "rebuilt" in rebuilt.stdout
    # a board that does not exist is refused with one line, not "rebuilt 0 periods"
    for command in (["rebuild"], ["freeze", "--wait", "0"]):
        refused = rankd(*command, "--board", "nope", "--data-dir", str(data_dir))
        assert refused.returncode != 0
        # one line says why (the others are the embedded servers starting and stopping)
        assert (
            "board 'nope' does not exist; `GET /v1/boards` lists the boards"
            in refused.stderr.splitlines()
        ), refused.stderr
        assert "Traceback" not in refused.stderr
        assert "rebuilt" not in refused.stdout and "froze" not in refused.stdout


def test_version_prints_the_package_version() -> None:
    from rankd import __version__

    result = rankd("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"rankd {__version__}"


def test_serve_refuses_a_busy_port_before_starting_any_server(server_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = rankd("serve", "--port", str(port), "--data-dir", str(server_dir / "d"))
    assert_refused(result, f"127.0.0.1:{port}", "--port")
    assert not (server_dir / "d" / "postgres").exists()


def test_serve_refuses_a_data_dir_another_process_holds(server_dir: Path) -> None:
    lock = datadir.acquire(server_dir)
    try:
        result = rankd("serve", "--port", str(free_port()), "--data-dir", str(server_dir))
    finally:
        lock.release()
    assert_refused(result, "in use", f"pid {os.getpid()}", "--data-dir")
    assert not (server_dir / "redis").exists()


@pytest.mark.parametrize(
    "command", [["rebuild"], ["replay"], ["replay", "--parked"], ["freeze", "--wait", "0"]]
)
def test_maintenance_commands_refuse_a_folder_without_data(
    server_dir: Path, command: list[str]
) -> None:
    empty = server_dir / "elsewhere"
    result = rankd(*command, "--data-dir", str(empty))
    assert_refused(result, str(empty), "no Rankd data", "--allow-empty")
    assert not empty.exists()  # not even the folder was made


def test_make_run_passes_port_host_and_data_dir() -> None:
    # --no-print-directory: run from `make test`, the nested make would add its own lines
    options = ["PORT=8001", "HOST=0.0.0.0", "DATA_DIR=/srv/rankd"]
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "run", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    [command] = [line for line in dry.stdout.splitlines() if "rankd serve" in line]
    assert "rankd serve --host '0.0.0.0' --port '8001' --data-dir '/srv/rankd'" in command
    default = subprocess.run(
        ["make", "-n", "--no-print-directory", "run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--port '8000'" in default.stdout


# --------------------------------------------------------------------------- failing starts


def serve_failing(env: dict[str, str], data_dir: Path, within_s: float) -> tuple[str, float]:
    """Run `rankd serve` expecting it to refuse: non-zero exit within ``within_s``, one
    line on stderr and no traceback, and no process of its session left behind."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "rankd.cli", "serve", "--port", str(free_port()),
         "--data-dir", str(data_dir)],
        env=cli_env() | env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        _out, err = process.communicate(timeout=within_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError(f"rankd serve still running after {within_s}s") from None
    took = time.monotonic() - started
    assert process.returncode not in (0, None), err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    # its children (an embedded server, a worker) would share its session
    left = _session_members(process.pid)
    assert not left, f"processes left behind: {left}"
    return lines[0], took


def _session_members(sid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"RANKD_PUBLISH_TIMEOUT_S": "-1"}, ["RANKD_PUBLISH_TIMEOUT_S", "greater than 0"]),
        ({"RANKD_LOG_LEVEL": "verbose"}, ["RANKD_LOG_LEVEL", "'verbose'", "debug"]),
        ({"RANKD_HTTP_MAX_CONNECTIONS": "many"}, ["RANKD_HTTP_MAX_CONNECTIONS", "integer"]),
        ({"RANKD_CONSUMER_BACKOFF_S": "[1,"}, ["RANKD_CONSUMER_BACKOFF_S", "JSON"]),
        (
            {
                "RANKD_REDIS_URL": "nonsense",
                "RANKD_POSTGRES_URL": "nonsense",
                "RANKD_NATS_URL": "nonsense",
            },
            ["RANKD_REDIS_URL", "RANKD_POSTGRES_URL", "RANKD_NATS_URL", "not a URL"],
        ),
        ({"RANKD_REDIS_URL": "redis://127.0.0.1:1"}, ["RANKD_POSTGRES_URL", "unset"]),
        # the embedded Redis's limit, checked before any embedded server starts
        ({"RANKD_REDIS_MAX_MEMORY": "lots"}, ["RANKD_REDIS_MAX_MEMORY", "'lots'", "512mb"]),
        ({"RANKD_PLAYER_TOKEN_SECRET": "short"}, ["RANKD_PLAYER_TOKEN_SECRET", "32 bytes"]),
        ({"RANKD_CORS_ORIGINS": "game.example"}, ["RANKD_CORS_ORIGINS", "not an origin"]),
        ({"RANKD_LOG_RETENTION": "forever"}, ["RANKD_LOG_RETENTION", "7d,20gb"]),
        # these failed only once the servers ran (tests/unit/test_settings_refusals.py walks all)
        ({"RANKD_SEASON_SETTLE_S": "inf"}, ["RANKD_SEASON_SETTLE_S", "finite"]),
        (
            {"RANKD_POSTGRES_POOL_MIN": "5", "RANKD_POSTGRES_POOL_MAX": "2"},
            ["RANKD_POSTGRES_POOL_MIN", "RANKD_POSTGRES_POOL_MAX"],
        ),
        ({"RANKD_CONSUMER_BACKOFF_S": "[-1]"}, ["RANKD_CONSUMER_BACKOFF_S", "over 0"]),
        ({"RANKD_STREAM_REPLICAS": "3"}, ["RANKD_STREAM_REPLICAS=3", "--topology cluster"]),
        ({"RANKD_DATA_DIR": __file__}, ["RANKD_DATA_DIR", "is a file, not a folder"]),
    ],
)
def test_serve_refuses_a_bad_setting_in_one_line_starting_nothing(
    server_dir: Path, env: dict[str, str], words: list[str]
) -> None:
    line, _ = serve_failing(env, server_dir / "d", within_s=30)
    for word in words:
        assert word in line, (word, line)
    assert not (server_dir / "d" / "redis").exists()


@pytest.mark.parametrize(
    "env",
    [
        {"RANKD_ADMIN_KEYS": "schlüssel-hunter2"},
        {"RANKD_PLAYER_TOKEN_SECRET": "hunter2"},
        {
            "RANKD_REDIS_URL": "redis://:hunter2@127.0.0.1:port/0",
            "RANKD_POSTGRES_URL": "postgresql://u:hunter2@127.0.0.1:x/rankd",
            "RANKD_NATS_URL": "nats://u:hunter2@127.0.0.1:y",
        },
    ],
)
def test_serve_never_repeats_a_secret_it_refuses(server_dir: Path, env: dict[str, str]) -> None:
    line, _ = serve_failing(env, server_dir / "d", within_s=30)
    assert all(variable in line for variable in env), line
    assert "hunter2" not in line, line


def test_serve_refuses_a_data_dir_flag_naming_a_file(server_dir: Path) -> None:
    a_file = server_dir / "file"
    a_file.write_text("")
    line, _ = serve_failing({}, a_file, within_s=30)
    assert "is a file, not a folder" in line and "--data-dir" in line, line


def test_serve_exits_in_one_line_when_a_service_is_unreachable(
    server_dir: Path, urls: Urls
) -> None:
    """Each service unreachable in turn (the others real): one line naming its variable,
    within the 5 s connect timeout."""
    good = {
        "RANKD_REDIS_URL": urls.redis,
        "RANKD_POSTGRES_URL": urls.postgres,
        "RANKD_NATS_URL": urls.nats,
    }
    dead = f"127.0.0.1:{free_port()}"
    missing_db = urls.postgres.rsplit("/", 1)[0] + "/no_such_database"
    for variable, url, why in [
        ("RANKD_REDIS_URL", f"redis://{dead}/0", "cannot connect"),
        ("RANKD_NATS_URL", f"nats://{dead}", "cannot connect"),
        ("RANKD_POSTGRES_URL", f"postgresql://postgres@{dead}/rankd", "cannot connect"),
        ("RANKD_POSTGRES_URL", missing_db, "does not exist"),
    ]:
        line, took = serve_failing(good | {variable: url}, server_dir, within_s=20)
        print(f"{variable}={url}: {took:.1f}s: {line}")
        assert variable in line and why in line, line
        assert took < 15, f"took {took:.1f}s"
