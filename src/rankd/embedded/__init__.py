"""Embedded Redis, PostgreSQL and NATS (JetStream) servers for ``rankd serve`` and the tests.

Each server is a real child process, listening on 127.0.0.1 only, with its state under one
data directory::

    <data_dir>/redis      Redis AOF files + redis.log
    <data_dir>/postgres   PostgreSQL data directory (PGDATA) + postgres.log
    <data_dir>/nats       nats.conf, JetStream store (js/) + nats.log

Data survives ``stop()``/``start()`` with the same data dir. The servers are configured for
durability rather than raw speed, because rankd acknowledges writes to its clients (details
in each server's module): Redis appends every write to its AOF and fsyncs it every second,
PostgreSQL commits synchronously, and JetStream fsyncs each message before acking it.

The package is split by concern: :mod:`.process` holds what all three share (the child
process, pidfiles, orphan reclaim, process-tree kill, the atexit stop), and
:mod:`.redis_server`, :mod:`.postgres_server` and :mod:`.nats_server` one server each. This
module starts them together.

Typical use::

    with start_embedded(Path(".rankd")) as servers:
        print(servers.redis_url, servers.postgres_url, servers.nats_url)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from rankd.embedded.nats_server import NatsServer, find_nats_server
from rankd.embedded.postgres_server import PostgresServer, find_postgres_bin_dir
from rankd.embedded.process import (
    EmbeddedServerError,
    ServerProcess,
    free_port,
    start_all,
    stop_all,
)
from rankd.embedded.redis_server import RedisServer, find_redis_server

__all__ = [
    "EmbeddedServerError",
    "EmbeddedServers",
    "NatsServer",
    "PostgresServer",
    "RedisServer",
    "ServerProcess",
    "find_nats_server",
    "find_postgres_bin_dir",
    "find_redis_server",
    "free_port",
    "start_embedded",
]


@dataclass
class EmbeddedServers:
    """The started servers; a member is None if it was disabled in :func:`start_embedded`."""

    redis: RedisServer | None
    postgres: PostgresServer | None
    nats: NatsServer | None

    @property
    def redis_url(self) -> str:
        if self.redis is None:
            raise EmbeddedServerError("embedded Redis was not started (redis=False)")
        return self.redis.url

    @property
    def postgres_url(self) -> str:
        if self.postgres is None:
            raise EmbeddedServerError("embedded PostgreSQL was not started (postgres=False)")
        return self.postgres.url

    @property
    def nats_url(self) -> str:
        if self.nats is None:
            raise EmbeddedServerError("embedded NATS was not started (nats=False)")
        return self.nats.url

    @property
    def servers(self) -> list[ServerProcess]:
        return [s for s in (self.redis, self.postgres, self.nats) if s is not None]

    def stop(self) -> None:
        """Stop every server. Idempotent, tolerant of already-dead processes."""
        stop_all(self.servers)

    def __enter__(self) -> EmbeddedServers:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_embedded(
    data_dir: Path,
    *,
    redis: bool = True,
    postgres: bool = True,
    nats: bool = True,
    redis_port: int | None = None,
    postgres_port: int | None = None,
    nats_port: int | None = None,
) -> EmbeddedServers:
    """Start the selected servers in parallel under ``data_dir`` and wait until all are ready.

    Ports default to free loopback ports. On any failure, whatever did start is stopped and
    the (first) error is re-raised.
    """
    data_dir = Path(data_dir).absolute()
    data_dir.mkdir(parents=True, exist_ok=True)
    servers = EmbeddedServers(
        redis=RedisServer(data_dir, redis_port) if redis else None,
        postgres=PostgresServer(data_dir, postgres_port) if postgres else None,
        nats=NatsServer(data_dir, nats_port) if nats else None,
    )
    try:
        start_all(servers.servers)
    except BaseException:
        with contextlib.suppress(Exception):
            servers.stop()
        raise
    return servers
