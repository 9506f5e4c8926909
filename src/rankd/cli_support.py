"""What every ``rankd`` command shares: its settings, its servers, and one-line failures."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError

from rankd.embedded import startup
from rankd.settings import CREDENTIALS, Settings

DataDir = Annotated[
    Path | None, typer.Option(help="where embedded servers keep their data [./.rankd]")
]


def fail(message: str) -> NoReturn:
    """One line on stderr and a non-zero exit: for what the user can fix, no traceback."""
    typer.echo(message, err=True)
    raise typer.Exit(3)


@contextlib.contextmanager
def located_services(settings: Settings, wanted: startup.Wanted) -> Iterator[Settings]:
    """Settings with the service URLs, embedded servers started if need be
    (embedded/startup.py); what the user can fix exits with one line."""
    try:
        with startup.services(
            settings, wanted, note=lambda line: typer.echo(line, err=True)
        ) as ready:
            yield ready
    except startup.StartupRefused as refused:
        fail(str(refused))


SECRET_FIELDS = frozenset({"admin_keys", "server_keys", "player_token_secret", "webhook_secret"})


def settings_error(error: ValidationError | SettingsError) -> str:
    """A settings failure as one line: each variable at fault, what it held, and why (never
    a secret, nor a URL's password)."""
    if isinstance(error, SettingsError):  # a value that is not the JSON it must be
        found = re.search(r'field "(\w+)"', str(error))
        field = found.group(1).upper() if found else "?"
        return f"RANKD_{field}: not valid JSON (e.g. [1, 2.5])"
    problems = []
    for item in error.errors():
        reason = str(item["msg"]).removeprefix("Value error, ").rstrip(".")
        if not item["loc"]:  # settings refused together (Settings._together) name themselves
            problems.append(reason)
            continue
        field = str(item["loc"][0])
        given = item.get("input")
        secret = field in SECRET_FIELDS  # a secret is never repeated in an error
        shown = "" if given is None or secret else f"={CREDENTIALS.sub('***@', str(given))[:80]!r}"
        problems.append(f"RANKD_{field.upper()}{shown}: {reason}")
    return "; ".join(problems)


def load_settings(command: str, data_dir: Path | None) -> Settings:
    """The settings from the environment; a bad value exits with one line naming it."""
    try:
        settings = Settings()
    except (ValidationError, SettingsError) as exc:
        fail(f"{command}: {settings_error(exc)}")
    return settings if data_dir is None else settings.model_copy(update={"data_dir": data_dir})


def exit_on_store_failure(command: str, exc: Exception) -> NoReturn:
    """A store gone away is the operator's to fix, not a bug: one line and exit 1, not a
    traceback; anything else is raised again."""
    from rankd.stores.failures import store_failure

    if not store_failure(exc):
        raise exc
    from rankd.api.errors import causes

    typer.echo(f"{command}: {exc} ({causes(exc)})", err=True)
    raise SystemExit(1) from None
