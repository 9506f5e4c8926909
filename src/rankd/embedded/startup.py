"""Where a ``rankd`` command's Redis, PostgreSQL and NATS are, started here if they must be.

In order: the URLs in the environment (``RANKD_*_URL``, all three or none); else, for a
command other than ``serve``, those of a ``rankd serve`` running on the same data dir (it
writes them to ``<data-dir>/services.json``); else embedded servers started here, in the
data dir's topology (single, cluster or sentinel; topology.py), on a data dir this process
locks (datadir.py). A serving process also runs the supervisor, which restarts a server
that dies (supervisor.py; /readyz reads its status file). Everything started is stopped
when the command ends.

What the user can fix (a bad flag, a data dir in use or without data, servers that did not
start) raises :class:`StartupRefused` with one line for the command to print.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rankd import datadir
from rankd.datadir import not_a_folder
from rankd.embedded.lifecycle import EmbeddedServers, start_embedded
from rankd.embedded.process import EmbeddedServerError
from rankd.embedded.redis_server import max_memory
from rankd.embedded.supervisor import STATUS_FILE, Supervisor
from rankd.embedded.topology import (
    TOPOLOGIES,
    Topology,
    TopologyServers,
    check_topology,
    recorded_topology,
    start_topology,
)
from rankd.settings import Settings

SERVICES_FILE = "services.json"  # the URLs of a running `rankd serve`'s embedded servers


class StartupRefused(Exception):
    """The command cannot start as asked; the message is one line naming the fix."""


@dataclass(frozen=True)
class Wanted:
    """What a command asks of start-up (see ``services``)."""

    command: str  # its name in messages, e.g. "rankd serve"
    serving: bool = False
    has_data: Callable[[Path], bool] | None = None
    allow_empty: bool = False
    before_start: Callable[[], None] | None = None
    topology: str | None = None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def services(
    settings: Settings, wanted: Wanted, note: Callable[[str], None] = print
) -> Iterator[Settings]:
    """Settings with service URLs: from the environment, else from a running `rankd serve`
    on the same data dir (not when serving), else from embedded servers started here, on a
    data dir this process locks (datadir.py). A command that needs data (``has_data``)
    refuses a data dir without it unless ``allow_empty``: empty servers would only make
    it look done. ``before_start`` runs just before servers are started; ``note`` tells
    the user they are starting and stopping. A service that cannot be reached (within the
    drivers' connect timeout) is refused before the command builds anything on it."""
    with _located(settings, wanted, note) as located:
        _check_reachable(wanted.command, located)
        yield located


def _check_reachable(command: str, settings: Settings) -> None:
    from rankd.stores.probe import unreachable  # the drivers: only once they are needed

    assert settings.redis_url and settings.postgres_url and settings.nats_url
    problems = asyncio.run(
        unreachable(settings.redis_url, settings.postgres_url, settings.nats_url)
    )
    if problems:
        raise StartupRefused(f"{command}: " + "; ".join(problems))


@contextlib.contextmanager
def _located(settings: Settings, wanted: Wanted, note: Callable[[str], None]) -> Iterator[Settings]:
    command, serving, topology = wanted.command, wanted.serving, wanted.topology
    has_data, allow_empty = wanted.has_data, wanted.allow_empty
    urls = (settings.redis_url, settings.postgres_url, settings.nats_url)
    if topology is not None and topology not in TOPOLOGIES:
        raise StartupRefused(
            f"{command}: --topology must be one of {', '.join(TOPOLOGIES)}, not {topology!r}"
        )
    if all(urls):
        if topology is not None:
            raise StartupRefused(
                f"{command}: --topology is for embedded servers; RANKD_*_URL are set"
            )
        yield settings
        return
    if any(urls):
        unset = [
            f"RANKD_{name.upper()}"
            for name, url in zip(("redis_url", "postgres_url", "nats_url"), urls, strict=True)
            if not url
        ]
        raise StartupRefused(
            f"{command}: {', '.join(unset)} unset: set all of RANKD_REDIS_URL, "
            "RANKD_POSTGRES_URL and RANKD_NATS_URL, or none (the embedded default)"
        )
    if serving:
        # what the embedded servers are started with, checked before any of them starts
        try:
            max_memory()
        except ValueError as exc:
            raise StartupRefused(f"{command}: {exc}") from None
    data_dir = settings.data_dir.resolve()
    if (problem := not_a_folder(data_dir)) is not None:  # --data-dir (RANKD_DATA_DIR is checked)
        raise StartupRefused(f"{command}: the data dir: {problem}; pick a folder with --data-dir")
    shared = data_dir / SERVICES_FILE
    if not serving and shared.exists():
        known = json.loads(shared.read_text())
        if pid_alive(int(known["pid"])):
            yield settings.model_copy(
                update={k: known[k] for k in ("redis_url", "postgres_url", "nats_url")}
            )
            return
    if has_data is not None and not allow_empty and not has_data(data_dir):
        raise StartupRefused(
            f"{command}: {data_dir} holds no Rankd data; run it where `rankd serve` keeps its "
            "data (--data-dir, RANKD_DATA_DIR or RANKD_*_URL), or pass --allow-empty"
        )
    try:
        lock = datadir.acquire(data_dir)
    except datadir.DataDirInUse as busy:
        owner = f"rankd (pid {busy.pid})" if busy.pid is not None else "another rankd"
        raise StartupRefused(
            f"{command}: the data dir {busy.data_dir} is in use by {owner}; stop it, "
            "or pick another data dir with --data-dir"
        ) from None
    try:
        with _embedded(data_dir, topology, settings, wanted, note) as urls_now:
            yield settings.model_copy(update=urls_now)
    finally:
        lock.release()


def _check_single(command: str, settings: Settings) -> None:
    """Refuse what one embedded server of each cannot do, before any of them starts."""
    if settings.stream_replicas > 1:
        raise StartupRefused(
            f"{command}: RANKD_STREAM_REPLICAS={settings.stream_replicas} needs a NATS cluster; "
            "the embedded single topology has one server: set 1, or --topology cluster"
        )
    if settings.redis_read_from_replicas:
        raise StartupRefused(
            f"{command}: RANKD_REDIS_READ_FROM_REPLICAS needs Redis replicas; the embedded "
            "single topology has none: unset it, or --topology cluster|sentinel"
        )


@contextlib.contextmanager
def _embedded(
    data_dir: Path,
    topology: Topology | None,
    settings: Settings,
    wanted: Wanted,
    note: Callable[[str], None],
) -> Iterator[dict[str, object]]:
    """The settings of embedded servers started (and, on exit, stopped) on a locked data dir."""
    command, serving, before_start = wanted.command, wanted.serving, wanted.before_start
    try:
        shape: Topology = topology or recorded_topology(data_dir) or "single"
        check_topology(data_dir, shape)
    except EmbeddedServerError as exc:
        raise StartupRefused(f"{command}: {exc}") from None
    if shape == "single":  # one server of each: what needs more would fail once started
        _check_single(command, settings)
    if before_start is not None:
        before_start()
    note(f"starting embedded Redis, PostgreSQL and NATS ({shape}) in {data_dir} ...")
    try:
        servers: EmbeddedServers | TopologyServers = (
            start_embedded(data_dir) if shape == "single" else start_topology(data_dir, shape)
        )
    except EmbeddedServerError as exc:
        raise StartupRefused(f"{command}: the embedded servers did not start: {exc}") from None
    shared = data_dir / SERVICES_FILE
    supervisor: Supervisor | None = None
    try:
        urls_now: dict[str, object] = {
            "redis_url": servers.redis_url,
            "postgres_url": servers.postgres_url,
            "nats_url": servers.nats_url,
        }
        if isinstance(servers, TopologyServers):
            urls_now["stream_replicas"] = servers.stream_replicas
        if serving:
            shared.write_text(json.dumps({**urls_now, "pid": os.getpid()}))
            # restarts a server that dies (supervisor.py); /readyz reads its status file
            supervisor = Supervisor(servers.servers, data_dir / STATUS_FILE)
            supervisor.start()
            urls_now["embedded_status_file"] = data_dir / STATUS_FILE
        yield urls_now
    finally:
        if supervisor is not None:
            supervisor.stop()  # before the servers stop on purpose
        if serving:
            shared.unlink(missing_ok=True)
        note("stopping embedded servers ...")
        servers.stop()
