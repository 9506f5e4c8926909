"""The ``rankd`` command: serve, rebuild, freeze, replay (backup and restore: cli_backup.py)."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, TypeVar

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

from rankd import datadir, logs
from rankd.cli_backup import backup, restore
from rankd.cli_support import DataDir, exit_on_store_failure, fail, load_settings, located_services
from rankd.embedded import startup
from rankd.settings import Settings

app = typer.Typer(add_completion=False, help="Rankd: real-time leaderboards for games.")
log = logging.getLogger("rankd")
T = TypeVar("T")

AllowEmpty = Annotated[
    bool,
    typer.Option(
        "--allow-empty",
        help="start embedded servers even on a data dir that holds no Rankd data",
    ),
]
TopologyOption = Annotated[
    str | None,
    typer.Option(
        help="embedded servers' shape: single, cluster (Redis Cluster 3+3, JetStream x3) or "
        "sentinel (Redis primary, replica, 3 Sentinels; JetStream x3) [the data dir's, else "
        "single]"
    ),
]


def _exit_on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    # Turn SIGTERM into a clean exit so `finally` stops the embedded servers (no orphans).
    raise SystemExit(0)


def _check_port(host: str, port: int) -> None:
    """Fail now if (host, port) cannot be bound, before any server is started."""
    # bound as uvicorn binds it: IPv6 for an address with a colon, SO_REUSEADDR set
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except socket.gaierror as exc:
            fail(f"rankd serve: cannot listen on {host}: {exc.strerror}; check --host")
        except OSError as exc:
            fail(
                f"rankd serve: cannot listen on {host}:{port}: {exc.strerror}; "
                "pick another port with --port (nothing was started)"
            )


def _print_version(value: bool) -> None:
    if value:
        from rankd import __version__

        typer.echo(f"rankd {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="print the version and exit", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Rankd: real-time leaderboards for games."""


async def _known_board(runtime: Any, board: str | None) -> None:
    """Refuse a board that does not exist with one line (a typo would otherwise do nothing
    and report success)."""
    from rankd.errors import BoardNotFound

    if board is None:
        return
    try:
        await runtime.boards.get(board, recent_unknown_ok=False)
    except BoardNotFound:
        fail(f"board {board!r} does not exist; `GET /v1/boards` lists the boards")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on", min=1, max=65535)] = 8000,
    data_dir: DataDir = None,
    workers: Annotated[
        int, typer.Option(help="worker processes sharing nothing but the servers", min=1, max=64)
    ] = 1,
    topology: TopologyOption = None,
) -> None:
    """Run the HTTP service; with no RANKD_*_URL set, on embedded Redis, PostgreSQL and NATS."""
    settings = load_settings("rankd serve", data_dir)
    logs.configure(settings.log_level)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    services = located_services(
        settings,
        startup.Wanted(
            "rankd serve",
            serving=True,
            before_start=lambda: _check_port(host, port),
            topology=topology,
        ),
    )
    if settings.redis_url or settings.postgres_url or settings.nats_url:
        _check_port(host, port)  # no embedded servers: nothing else checks it first
    with services as settings:
        if not settings.admin_keys and not settings.server_keys:
            typer.echo("warning: RANKD_ADMIN_KEYS and RANKD_SERVER_KEYS are empty; only reads work")
        from rankd.api.server import run

        if not run(settings, host=host, port=port, workers=workers):
            raise SystemExit(3)  # e.g. the port is taken; uvicorn has logged why


def _progress(label: str) -> Progress:
    return Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
    )


def _run_with_runtime(
    command: str,
    data_dir: Path | None,
    job: Callable[[Any], Coroutine[Any, Any, T]],
    *,
    has_data: Callable[[Path], bool],
    allow_empty: bool,
) -> T:
    from rankd.runtime import Runtime

    async def go(settings: Settings) -> T:
        runtime = Runtime.build(settings)
        await runtime.open(background=False)
        try:
            return await job(runtime)
        finally:
            await runtime.close()

    wanted = startup.Wanted(command, has_data=has_data, allow_empty=allow_empty)
    services = located_services(load_settings(command, data_dir), wanted)
    with services as settings:
        try:
            return asyncio.run(go(settings))
        except KeyboardInterrupt:
            # a period it had begun keeps no lease: the service rebuilds it on its next write
            typer.echo(f"{command}: interrupted; run it again to finish", err=True)
            raise SystemExit(130) from None
        except Exception as exc:
            exit_on_store_failure(command, exc)


def _rate_updater(progress: Progress, task: Any) -> Callable[[int], None]:
    def advance(n: int) -> None:
        progress.advance(task, n)
        elapsed = progress.tasks[0].elapsed or 0.0
        done = progress.tasks[0].completed
        rate = f"{done / elapsed:,.0f}/s" if elapsed > 0 else ""
        progress.update(task, rate=rate)

    return advance


@app.command()
def rebuild(
    board: Annotated[str | None, typer.Option(help="only this board")] = None,
    window: Annotated[str | None, typer.Option(help="only this window")] = None,
    period: Annotated[str | None, typer.Option(help="only this period id")] = None,
    data_dir: DataDir = None,
    allow_empty: AllowEmpty = False,
) -> None:
    """Restore Redis boards from PostgreSQL (atomically per period: readers never see half)."""
    from rankd.periods import WINDOWS

    if window is not None and window not in WINDOWS:
        raise typer.BadParameter(f"window must be one of {', '.join(WINDOWS)}")

    async def job(runtime: Any) -> None:
        await _known_board(runtime, board)
        with _progress("rebuild") as progress:
            task = progress.add_task("rebuild", total=None, rate="")
            report = await runtime.rebuilder.rebuild(
                board, window, period, _rate_updater(progress, task)
            )
        typer.echo(
            f"rebuilt {report.periods} periods, {report.members} members in "
            f"{report.seconds:.2f}s ({report.members_per_s:,.0f} members/s)"
        )
        for note in report.skipped:
            typer.echo(f"skipped {note}")

    _run_with_runtime(
        "rankd rebuild",
        data_dir,
        job,
        has_data=datadir.has_postgres_data,
        allow_empty=allow_empty,
    )


@app.command()
def freeze(
    board: Annotated[str | None, typer.Option(help="only this board's periods")] = None,
    wait: Annotated[
        float, typer.Option(help="seconds to wait for a running pass elsewhere to finish", min=0)
    ] = 60.0,
    data_dir: DataDir = None,
    allow_empty: AllowEmpty = False,
) -> None:
    """Run one pass of the season job now: freeze closed periods into the archive and let
    archived ones leave Redis (`rankd serve` runs it every RANKD_SEASON_JOB_INTERVAL_S)."""

    async def job(runtime: Any) -> None:
        await _known_board(runtime, board)
        with _progress("freeze") as progress:
            task = progress.add_task("freeze", total=None, rate="")
            report = await runtime.seasons.run_pass(
                progress=_rate_updater(progress, task),
                boards=None if board is None else [board],
                wait_for_lease_s=wait,
            )
        if not report.lease:
            typer.echo(f"another instance is running a season pass (waited {wait:g}s); retry")
            raise typer.Exit(1)
        typer.echo(
            f"froze {report.frozen} periods, {report.entries} entries archived in "
            f"{report.freeze_seconds:.2f}s ({report.entries_per_s:,.0f} entries/s); "
            f"{report.archived} left Redis, {report.thawed} reopened, "
            f"{report.waiting} waiting for the log"
            + (f"; {report.failed} failed (see the log)" if report.failed else "")
        )
        if report.failed:
            raise typer.Exit(1)

    _run_with_runtime(
        "rankd freeze", data_dir, job, has_data=datadir.has_postgres_data, allow_empty=allow_empty
    )


@app.command()
def replay(
    from_sequence: Annotated[
        int | None, typer.Option(help="first log sequence to apply [1]", min=1)
    ] = None,
    parked: Annotated[
        bool, typer.Option("--parked", help="re-apply the parked messages instead")
    ] = False,
    data_dir: DataDir = None,
    allow_empty: AllowEmpty = False,
) -> None:
    """Re-apply the run log to Redis and PostgreSQL (idempotent: twice changes nothing).

    With --parked, re-apply every message parked because it could not apply (once the cause
    is fixed): those that apply now are no longer parked, the others keep their new error.
    """
    from rankd.services.replay import replay as replay_log
    from rankd.services.replay import replay_parked

    if parked and from_sequence is not None:
        raise typer.BadParameter("--parked replays the parked messages, not a log range")
    first = 1 if from_sequence is None else from_sequence

    async def job(runtime: Any) -> None:
        if parked:
            await replay_parked_job(runtime)
            return
        last = await runtime.runlog.last_sequence()
        with _progress("replay") as progress:
            task = progress.add_task("replay", total=max(0, last - first + 1), rate="")
            report = await replay_log(
                runtime.runlog,
                runtime.applier,
                first,
                _rate_updater(progress, task),
                batch=runtime.settings.replay_batch,
            )
        typer.echo(
            f"replayed {report.messages} messages up to sequence {report.last_sequence} "
            f"in {report.seconds:.2f}s; parked {report.parked}"
        )

    async def replay_parked_job(runtime: Any) -> None:
        from rankd.stores import standings

        async with runtime.pg.pool.connection() as conn:
            total, _ = await standings.parked_summary(conn)
        with _progress("replay --parked") as progress:
            task = progress.add_task("replay", total=total, rate="")
            report = await replay_parked(
                runtime.applier,
                runtime.pg,
                _rate_updater(progress, task),
                batch=runtime.settings.replay_batch,
            )
        typer.echo(
            f"re-applied {report.applied} of {report.messages} parked messages "
            f"in {report.seconds:.2f}s; {report.still_parked} still parked"
        )

    _run_with_runtime(
        "rankd replay",
        data_dir,
        job,
        has_data=datadir.has_postgres_data if parked else datadir.has_log_data,
        allow_empty=allow_empty,
    )


app.command()(backup)
app.command()(restore)


def entry() -> None:
    """The `rankd` command: Ctrl-C at any moment (even while it starts) ends it with one
    line and exit 130, not a traceback."""
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("rankd: interrupted", err=True)
        raise SystemExit(130) from None


if __name__ == "__main__":
    entry()
