"""``rankd backup DIR`` and ``rankd restore DIR`` (services/backup.py does the work)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from rankd import datadir
from rankd.cli_support import DataDir, exit_on_store_failure, fail, load_settings, located_services
from rankd.embedded import startup
from rankd.settings import Settings

if TYPE_CHECKING:
    from rankd.runtime import Runtime

T = TypeVar("T")

Folder = Annotated[Path, typer.Argument(help="the backup's folder", show_default=False)]
PgBin = Annotated[
    Path | None,
    typer.Option(
        "--pg-bin",
        help="folder holding pg_dump and pg_restore, as new as the PostgreSQL server "
        "[the embedded PostgreSQL's]",
    ),
]


def _pg_bin(command: str, given: Path | None) -> Path:
    from rankd.embedded import find_postgres_bin_dir
    from rankd.embedded.process import EmbeddedServerError

    try:
        folder = given if given is not None else find_postgres_bin_dir()
    except EmbeddedServerError as exc:
        fail(f"{command}: {exc}; pass --pg-bin")
    tool = "pg_dump" if command == "rankd backup" else "pg_restore"
    if not (folder / tool).is_file():
        fail(f"{command}: {folder} has no {tool}; pass --pg-bin with PostgreSQL's bin folder")
    return folder


def _run(command: str, job: Coroutine[Any, Any, T]) -> T:
    from rankd.services.backup import BackupRefused

    try:
        return asyncio.run(job)
    except BackupRefused as refused:
        fail(f"{command}: {refused}")
    except KeyboardInterrupt:
        typer.echo(f"{command}: interrupted", err=True)
        raise SystemExit(130) from None
    except Exception as exc:
        exit_on_store_failure(command, exc)


async def _opened(settings: Settings) -> Runtime:
    """The service's parts on the restored stores, without its background work."""
    from rankd.runtime import Runtime

    runtime = Runtime.build(settings)
    await runtime.open(background=False)
    return runtime


def backup(folder: Folder, data_dir: DataDir = None, pg_bin: PgBin = None) -> None:
    """Write a consistent backup into a new or empty folder: PostgreSQL's dump (the durable
    copy of every board, run, name, ban, hold and archive) and the log position it covers.
    Runs beside a running service (writes go on)."""
    from rankd.services.backup import BackupRefused, check_target_folder, take_backup

    command = "rankd backup"
    settings = load_settings(command, data_dir)
    try:
        check_target_folder(folder)
    except BackupRefused as refused:
        fail(f"{command}: {refused}")
    tools = _pg_bin(command, pg_bin)
    wanted = startup.Wanted(command, has_data=datadir.has_postgres_data)
    with located_services(settings, wanted) as ready:
        report = _run(command, take_backup(ready, folder.resolve(), tools))
    m = report.manifest
    typer.echo(
        f"backed up {m.dump_bytes:,} bytes of PostgreSQL into {folder} in {report.seconds:.2f}s; "
        f"it covers the log through sequence {m.applied_through} (the log was at {m.log_last})"
    )


def restore(folder: Folder, data_dir: DataDir = None, pg_bin: PgBin = None) -> None:
    """Restore a backup into an empty PostgreSQL (a new data dir, or one whose PostgreSQL
    was lost, or new services), apply the log's later runs where it still has them, and
    rebuild Redis. Stop `rankd serve` first; start it again afterwards."""
    from rankd.services.backup import BackupRefused, Manifest, restore_backup

    command = "rankd restore"
    settings = load_settings(command, data_dir)
    try:
        Manifest.read(folder)  # before any server starts
    except BackupRefused as refused:
        fail(f"{command}: {refused}")
    tools = _pg_bin(command, pg_bin)
    with located_services(settings, startup.Wanted(command)) as ready:
        report = _run(command, restore_backup(ready, folder.resolve(), tools, _opened))
    typer.echo(
        f"restored {folder} (the log through sequence {report.applied_through}), then "
        f"{report.replayed_messages} later log messages up to sequence {report.replayed_to}; "
        f"rebuilt {report.members} members into Redis in {report.seconds:.2f}s"
    )
    if report.missing_sequences:
        typer.echo(
            f"warning: the log no longer holds {report.missing_sequences} sequences after the "
            "backup (dropped by its retention): runs among them are not restored",
            err=True,
        )
    if report.log_moved_to is not None:
        typer.echo(f"the empty log continues at sequence {report.log_moved_to}")
