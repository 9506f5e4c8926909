"""The ``rankd`` command."""

from __future__ import annotations

import logging
import os
import signal
from types import FrameType
from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from rankd.settings import Settings

app = typer.Typer(add_completion=False, help="Rankd: real-time leaderboards for games.")
log = logging.getLogger("rankd")


def _exit_on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    # Turn SIGTERM into a clean exit so `finally` stops the embedded servers (no orphans).
    raise SystemExit(0)


@app.callback()
def main() -> None:
    """Rankd: real-time leaderboards for games."""


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on", min=1, max=65535)] = 8000,
    data_dir: Annotated[
        Path | None, typer.Option(help="where embedded servers keep their data [./.rankd]")
    ] = None,
) -> None:
    """Run the HTTP service; with no RANKD_*_URL set, on embedded Redis, PostgreSQL and NATS."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    settings = Settings()
    if data_dir is not None:
        settings.data_dir = data_dir
    urls = (settings.redis_url, settings.postgres_url, settings.nats_url)
    servers = None
    if not all(urls):
        if any(urls):
            raise typer.BadParameter(
                "set all of RANKD_REDIS_URL, RANKD_POSTGRES_URL and RANKD_NATS_URL, or none"
            )
        from rankd.embedded import start_embedded

        typer.echo(f"starting embedded Redis, PostgreSQL and NATS in {settings.data_dir} ...")
        servers = start_embedded(settings.data_dir.resolve())
        settings.redis_url = servers.redis_url
        settings.postgres_url = servers.postgres_url
        settings.nats_url = servers.nats_url
    if not settings.admin_keys and not settings.server_keys:
        typer.echo("warning: RANKD_ADMIN_KEYS and RANKD_SERVER_KEYS are empty; only reads work")
    try:
        from rankd.api.app import create_app

        uvicorn.run(
            create_app(settings),
            host=host,
            port=port,
            loop="uvloop",
            http="httptools",
            log_level=os.environ.get("RANKD_LOG_LEVEL", "info").lower(),
            access_log=False,
        )
    finally:
        if servers is not None:
            typer.echo("stopping embedded servers ...")
            servers.stop()


if __name__ == "__main__":
    app()
