"""The embedded servers of one machine, started and stopped together.

:func:`start_embedded` starts Redis, PostgreSQL and NATS in parallel under one data dir
(:func:`start_all`) and hands back :class:`EmbeddedServers`, whose ``stop`` stops each one
(:func:`stop_all`); on any failure whatever did start is stopped first. topology.py builds
the cluster and sentinel shapes from the same two functions, and startup.py decides which
to start for a ``rankd`` command.

Typical use::

    with start_embedded(Path(".rankd")) as servers:
        print(servers.redis_url, servers.postgres_url, servers.nats_url)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from rankd.embedded.nats_server import NatsServer
from rankd.embedded.postgres_server import PostgresServer
from rankd.embedded.process import EmbeddedServerError, ServerProcess
from rankd.embedded.redis_server import RedisServer


def start_all(servers: Sequence[ServerProcess]) -> None:
    """Start ``servers`` in parallel and wait for every one; raise the first failure (with
    the others as notes). The caller stops what did start."""
    if not servers:
        return
    with ThreadPoolExecutor(max_workers=len(servers), thread_name_prefix="embedded") as pool:
        futures = [pool.submit(s.start) for s in servers]
        errors = [e for e in (f.exception() for f in futures) if e is not None]
    if errors:
        first = errors[0]
        for other in errors[1:]:
            first.add_note(f"also failed: {other!r}")
        raise first


def stop_all(servers: Iterable[ServerProcess]) -> None:
    """Stop every server, tolerant of dead ones; raise the first failure after trying all.

    Sequential on purpose (each takes ~0.1 s): no thread pool, so it also works from an
    atexit handler, where concurrent.futures refuses new work.
    """
    errors: list[Exception] = []
    for server in servers:
        try:
            server.stop()
        except Exception as exc:  # keep stopping the others
            errors.append(exc)
    if errors:
        raise errors[0]


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
