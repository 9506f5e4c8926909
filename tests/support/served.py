"""`rankd serve` as a user runs it: its own process, embedded servers in a data dir of the
test's, ready once /readyz says 200; stopped with SIGTERM (killed if it will not go)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.live import free_port


class Served:
    def __init__(self, data_dir: Path, env: dict[str, str], *, ready_within_s: float = 90) -> None:
        """``env``: the RANKD_ settings on top of this process's environment (whose
        RANKD_*_URL are dropped: the service starts its own embedded servers)."""
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("RANKD_REDIS_URL", "RANKD_POSTGRES_URL", "RANKD_NATS_URL")
        }
        self.env |= {"RANKD_DATA_DIR": str(data_dir), "RANKD_LOG_LEVEL": "warning", **env}
        command = [sys.executable, "-m", "rankd.cli", "serve", "--port", str(self.port)]
        self.process = subprocess.Popen(command, env=self.env)
        deadline = time.monotonic() + ready_within_s
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                    return
            assert self.process.poll() is None, "rankd serve exited"
            assert time.monotonic() < deadline, "rankd serve did not become ready"
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
