"""The data dir lock: one rankd per data dir, dropped by the kernel when its owner dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rankd import datadir


def test_one_holder_at_a_time_and_the_pid_is_named(tmp_path: Path) -> None:
    lock = datadir.acquire(tmp_path / "d")
    assert datadir.owner_pid(tmp_path / "d") == os.getpid()
    with pytest.raises(datadir.DataDirInUse) as busy:
        datadir.acquire(tmp_path / "d")
    assert busy.value.pid == os.getpid()
    assert datadir.is_locked(tmp_path / "d")
    lock.release()
    assert not datadir.is_locked(tmp_path / "d")
    datadir.acquire(tmp_path / "d").release()


def test_a_killed_holder_leaves_no_lock_behind(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from rankd import datadir; "
            "datadir.acquire(Path(sys.argv[1])); print('held', flush=True); time.sleep(60)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(datadir.DataDirInUse) as busy:
            datadir.acquire(tmp_path)
        assert busy.value.pid == holder.pid
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    deadline = time.monotonic() + 5
    while datadir.is_locked(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    datadir.acquire(tmp_path).release()  # the stale file holds no lock


def test_data_checks_look_for_each_store(tmp_path: Path) -> None:
    assert not datadir.has_postgres_data(tmp_path)
    assert not datadir.has_log_data(tmp_path)
    (tmp_path / "postgres").mkdir()
    (tmp_path / "postgres" / "PG_VERSION").write_text("18\n")
    (tmp_path / "nats" / "js" / "jetstream").mkdir(parents=True)
    assert datadir.has_postgres_data(tmp_path)
    assert datadir.has_log_data(tmp_path)
