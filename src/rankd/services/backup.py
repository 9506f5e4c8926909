"""``rankd backup DIR`` and ``rankd restore DIR``: the durable copy and the log position it
covers, and back.

A backup is PostgreSQL's own dump (``pg_dump``, one consistent snapshot) beside a manifest
naming the log position it covers. The position is the log consumer's ack floor read
*before* the dump starts: the consumer acknowledges a message only once PostgreSQL has
committed it, so every run logged at or below the floor is in the snapshot, and runs above
it may be too (applying is idempotent, so replaying them again changes nothing).

A restore goes into an empty PostgreSQL (a new data dir, or one whose PostgreSQL was lost;
a database that holds Rankd's tables is refused, nothing changed), then:

- Redis is emptied: it is only ever a copy (rebuilt from PostgreSQL below), and whatever it
  held was written after the backup, beside runs and moderation the restore may not have;
- the log's later runs are applied on top, from the floor on, where the log still has them
  (the backup's own log, which survived the loss of PostgreSQL); a log whose retention
  already dropped some of them is said so, with how many sequences are missing;
- an empty log (a new machine) is moved past the backup's last sequence before any run is
  logged, so sequence numbers the restored rows remember (an erasure's, a parked message's)
  are never given to new runs;
- every board is rebuilt into Redis from the restored copy.

A log that is neither empty nor the backup's own (another stream's history) is refused:
applying it would mix two services' runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from rankd import __version__
from rankd.errors import RankdError
from rankd.services.applier import Applier
from rankd.services.consumer import DURABLE
from rankd.services.rebuild import Rebuilder
from rankd.settings import Settings
from rankd.stores import postgres
from rankd.stores.log_shapes import LogState
from rankd.stores.redis.stores import RedisStores
from rankd.stores.runlog import JetStreamLog, RunLog

MANIFEST = "rankd-backup.json"
DUMP = "postgres.dump"
FORMAT = 1
DUMP_TIMEOUT_S = 6 * 3600.0  # pg_dump/pg_restore of a very large copy; a hang still ends


class BackupRefused(RankdError):
    """What the operator can fix; the message is one line naming the fix."""


@dataclass(frozen=True)
class Manifest:
    format: int
    rankd_version: str
    created_at: str
    # every run logged at or below this sequence is in the dump (the consumer's ack floor)
    applied_through: int
    # the log's last sequence once the dump was done: no restored row names a later one
    log_last: int
    log_created: str  # the log stream's creation time: which log the sequences belong to
    dump_bytes: int
    dump_sha256: str

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        path = folder / MANIFEST
        try:
            data = json.loads(path.read_text("utf-8"))
            manifest = cls(**data)
        except FileNotFoundError:
            raise BackupRefused(f"{folder} holds no Rankd backup ({MANIFEST} is missing)") from None
        except (ValueError, TypeError) as exc:
            raise BackupRefused(f"{path} is not a Rankd backup manifest: {exc}") from None
        if manifest.format != FORMAT:
            raise BackupRefused(
                f"{path} is backup format {manifest.format}; this rankd reads format {FORMAT}"
            )
        return manifest


@dataclass(frozen=True)
class BackupReport:
    folder: Path
    manifest: Manifest
    seconds: float


@dataclass(frozen=True)
class RestoreReport:
    applied_through: int
    replayed_messages: int
    replayed_to: int
    missing_sequences: int  # later runs the log no longer had (dropped by its retention)
    log_moved_to: int | None  # an empty log's first sequence, set past the backup's
    members: int
    seconds: float


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def check_target_folder(folder: Path) -> None:
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BackupRefused(f"{folder} is not an empty folder; back up into a new one")


def _libpq_url(url: str) -> str:
    # pg_dump and pg_restore take libpq's URL; the service's may name the driver
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def _run_pg_tool(tool: Path, args: list[str], what: str) -> None:
    done = subprocess.run(
        [str(tool), *args], capture_output=True, text=True, timeout=DUMP_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BackupRefused(f"{what} failed (exit {done.returncode}): {last}")


def dump(pg_bin: Path, postgres_url: str, folder: Path) -> Path:
    """PostgreSQL's custom-format dump of the whole database (one snapshot), in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"{DUMP}.part"
    _run_pg_tool(
        pg_bin / "pg_dump",
        ["--format=custom", "--no-owner", "--no-privileges", f"--file={part}", postgres_url],
        "pg_dump",
    )
    target = folder / DUMP
    part.rename(target)
    return target


def write_manifest(folder: Path, manifest: Manifest) -> None:
    part = folder / f"{MANIFEST}.part"
    part.write_text(json.dumps(asdict(manifest), indent=2) + "\n", "utf-8")
    with part.open("rb") as f:
        os.fsync(f.fileno())
    part.rename(folder / MANIFEST)  # last: a folder with a manifest is a whole backup


async def database_is_empty(postgres_url: str) -> bool:
    """Whether the database holds no table at all (a restore must not mix two copies)."""
    return await postgres.table_count(postgres_url) == 0


def restore_dump(pg_bin: Path, postgres_url: str, folder: Path, manifest: Manifest) -> None:
    path = folder / DUMP
    if not path.is_file():
        raise BackupRefused(f"{path} is missing: the backup is incomplete")
    if path.stat().st_size != manifest.dump_bytes or sha256_of(path) != manifest.dump_sha256:
        raise BackupRefused(f"{path} does not match its manifest (changed or truncated)")
    _run_pg_tool(
        pg_bin / "pg_restore",
        [
            "--no-owner",
            "--no-privileges",
            "--single-transaction",
            "--exit-on-error",
            f"--dbname={postgres_url}",
            str(path),
        ],
        "pg_restore",
    )


def new_manifest(folder: Path, applied_through: int, log_last: int, log_created: str) -> Manifest:
    path = folder / DUMP
    return Manifest(
        format=FORMAT,
        rankd_version=__version__,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        applied_through=applied_through,
        log_last=log_last,
        log_created=log_created,
        dump_bytes=path.stat().st_size,
        dump_sha256=sha256_of(path),
    )


def libpq(settings: Settings) -> str:
    assert settings.postgres_url is not None
    return _libpq_url(str(settings.postgres_url))


def _log(settings: Settings) -> JetStreamLog:
    assert settings.nats_url is not None
    return JetStreamLog(
        settings.nats_url,
        stream=settings.stream,
        subject_prefix=settings.subject_prefix,
        timeout_s=settings.publish_timeout_s,
        replicas=settings.stream_replicas,
    )


async def take_backup(settings: Settings, folder: Path, pg_bin: Path) -> BackupReport:
    """Dump PostgreSQL into ``folder`` (new or empty) with the log position it covers."""
    started = time.perf_counter()
    check_target_folder(folder)
    runlog = _log(settings)
    await runlog.open()
    try:
        # read before the dump starts: everything at or below it is in the snapshot
        applied_through = (await runlog.lag(DURABLE)).ack_floor
        await asyncio.to_thread(dump, pg_bin, libpq(settings), folder)
        state = await runlog.state()  # after it: no dumped row names a later sequence
    finally:
        await runlog.close()
    manifest = new_manifest(folder, applied_through, state.last, state.created)
    write_manifest(folder, manifest)
    return BackupReport(folder, manifest, time.perf_counter() - started)


@dataclass(frozen=True)
class LogPlan:
    replay_from: int | None  # the first later run to apply, None: no later runs
    missing: int  # later sequences the log no longer holds
    move_to: int | None  # an empty log's next sequence, set before anything is logged


def plan_log(manifest: Manifest, state: LogState) -> LogPlan:
    """What the restore does with the log it finds (see the module docstring)."""
    after = manifest.applied_through + 1
    same = bool(state.created) and state.created == manifest.log_created
    if state.messages == 0:
        missing = max(0, state.last - manifest.applied_through) if same else 0
        move_to = manifest.log_last + 1 if state.last < manifest.log_last else None
        return LogPlan(None, missing, move_to)
    if not same:
        raise BackupRefused(
            f"the run log holds messages {state.first}..{state.last} of another history than "
            "the backup's; restore with the backup's own log or an empty one"
        )
    return LogPlan(after if state.last >= after else None, max(0, state.first - after), None)


class Restorable(Protocol):
    """What a restore needs of an opened runtime (rankd.runtime.Runtime, built by the
    command, which sits above the services)."""

    settings: Settings
    redis: RedisStores
    runlog: RunLog
    applier: Applier
    rebuilder: Rebuilder

    async def close(self) -> None: ...


async def restore_backup(
    settings: Settings,
    folder: Path,
    pg_bin: Path,
    open_runtime: Callable[[Settings], Awaitable[Restorable]],
) -> RestoreReport:
    """Restore ``folder`` into empty PostgreSQL, then the log's later runs and Redis
    (``open_runtime``: the service's parts on the restored stores, opened after the dump is
    in, so its migrations only add what the backup lacks)."""
    from rankd.services.replay import replay

    started = time.perf_counter()
    manifest = Manifest.read(folder)
    url = libpq(settings)
    if not await database_is_empty(url):
        raise BackupRefused(
            "PostgreSQL already holds tables; restore into an empty database (a new data dir, "
            "or new services): nothing was changed"
        )
    runlog = _log(settings)
    await runlog.open()
    try:
        plan = plan_log(manifest, await runlog.state())  # refuses before anything changed
        await asyncio.to_thread(restore_dump, pg_bin, url, folder, manifest)
        if plan.move_to is not None:
            await runlog.purge_before(plan.move_to)
    finally:
        await runlog.close()
    runtime = await open_runtime(settings)
    try:
        # only ever a copy, and newer than the backup: rebuilt from the restored one below
        await runtime.redis.conn.client.flushall()
        replayed, replayed_to = 0, manifest.applied_through
        if plan.replay_from is not None:
            done = await replay(
                runtime.runlog,
                runtime.applier,
                plan.replay_from,
                batch=runtime.settings.replay_batch,
            )
            replayed, replayed_to = done.messages, done.last_sequence
        rebuilt = await runtime.rebuilder.rebuild()
    finally:
        await runtime.close()
    return RestoreReport(
        applied_through=manifest.applied_through,
        replayed_messages=replayed,
        replayed_to=replayed_to,
        missing_sequences=plan.missing,
        log_moved_to=plan.move_to,
        members=rebuilt.members if rebuilt is not None else 0,
        seconds=time.perf_counter() - started,
    )
