"""Every RANKD_ setting is checked before anything starts: a bad value is one line on stderr
naming its variable, exit 3, never a traceback or a failure once servers run.

The walk covers ``Settings.model_fields`` whole, so a new setting is covered the day it is
added: a number gets "lots", inf and nan, and a value past each of its bounds; a bool
"maybe"; a literal an unknown word; a patterned string one that breaks the pattern. What its
type does not tell (a URL, a key, a retention, a data dir) is in ``SPECIFIC``; a setting with
no invalid value is in ``NO_INVALID_VALUE`` with the reason. Settings that are each fine but
not together, and what only the embedded servers' shape decides (startup.py), follow.
The walk runs in-process (``load_settings``, what every command starts with);
tests/system/test_cli.py runs a handful of the same through a real `rankd serve`.
"""

from __future__ import annotations

import os
import typing
from pathlib import Path

import annotated_types
import pytest
import typer
from pydantic.fields import FieldInfo

from rankd.cli_support import load_settings
from rankd.embedded import startup
from rankd.settings import Settings

A_FILE = str(Path(__file__))  # a data dir that is a file
SECRET = "hunter2-must-never-show"

# Bad values the type and bounds do not imply (added to those they do).
SPECIFIC: dict[str, list[str]] = {
    "redis_url": [
        "nonsense",
        "redis://h:1,h:2/0",  # one server, two hosts
        "redis+sentinel://h:26379",  # no master name
        f"redis://:{SECRET}@h:port/0",
    ],
    "postgres_url": ["mysql://h:3306/db", "postgresql:///db", f"postgresql://u:{SECRET}@h:x/db"],
    "nats_url": ["http://h:4222", "nats://h:4222,nats://", f"nats://u:{SECRET}@h:zz"],
    "data_dir": [A_FILE, A_FILE + "/below"],
    "admin_keys": [f"schlüssel-{SECRET}", "a\tb"],  # no header can carry them
    "server_keys": [f"clé-{SECRET}"],
    "player_token_secret": [SECRET, "x" * 31, f"{'y' * 40},{SECRET}"],  # under 32 bytes
    "webhook_secret": [SECRET, "x" * 31],  # under 32 bytes
    "cors_origins": ["game.example", "*,https://a.example", "https://a.example:99999"],
    "log_retention": ["forever", "7d,7d", "0d", ""],
    "redis_max_memory": ["lots", "0", "2 gb", "-1gb"],
    "consumer_backoff_s": ["[1,", "5", "[-1]", "[0]", "[1e23]", '["inf"]', '["x"]'],
    "stream": ["RUNS.ALL", "x" * 65],
    "subject_prefix": ["a..b", "runs.>"],
}

# Settings no value of which is wrong, and why.
NO_INVALID_VALUE: dict[str, str] = {
    "embedded_status_file": (
        "written by `rankd serve` itself for its embedded servers (it overrides any value); "
        "/readyz reads it leniently: a missing or unreadable file is no status"
    ),
}

# Each fine alone, wrong together: the variables the line must name.
TOGETHER: list[tuple[dict[str, str], list[str]]] = [
    (
        {"RANKD_POSTGRES_POOL_MIN": "5", "RANKD_POSTGRES_POOL_MAX": "2"},
        ["RANKD_POSTGRES_POOL_MIN", "RANKD_POSTGRES_POOL_MAX", "at most"],
    ),
    (  # JetStream refuses a consumer whose max_deliver is not above len(backoff)
        {"RANKD_CONSUMER_MAX_DELIVER": "5"},
        ["RANKD_CONSUMER_MAX_DELIVER", "RANKD_CONSUMER_BACKOFF_S"],
    ),
    (
        {"RANKD_CONSUMER_MAX_DELIVER": "2", "RANKD_CONSUMER_BACKOFF_S": "[1, 2]"},
        ["RANKD_CONSUMER_MAX_DELIVER", "RANKD_CONSUMER_BACKOFF_S"],
    ),
    (
        {"RANKD_CONSUMER_MARK_WAIT_S": "15"},
        ["RANKD_CONSUMER_MARK_WAIT_S", "RANKD_APPLIED_MARKS_KEEP_S"],
    ),
    ({"RANKD_BAN_SETTLE_S": "0.2"}, ["RANKD_BAN_SETTLE_S", "RANKD_BAN_REFRESH_S"]),
    (
        {"RANKD_ADMIN_KEYS": f"a-{SECRET}", "RANKD_SERVER_KEYS": f"s,a-{SECRET}"},
        ["RANKD_ADMIN_KEYS", "RANKD_SERVER_KEYS", "share a key"],
    ),
    (
        {"RANKD_REDIS_READ_FROM_REPLICAS": "true", "RANKD_REDIS_URL": "redis://h:6379/0"},
        ["RANKD_REDIS_READ_FROM_REPLICAS", "RANKD_REDIS_URL"],
    ),
]


def _past_bounds(field: FieldInfo) -> list[str]:
    """A value just past each of a number's bounds."""
    found: list[object] = []
    for rule in field.metadata:
        if isinstance(rule, annotated_types.Ge):
            found.append(rule.ge - 1)  # type: ignore[operator]
        elif isinstance(rule, annotated_types.Gt):
            found.append(rule.gt)
        elif isinstance(rule, annotated_types.Le):
            found.append(rule.le + 1)  # type: ignore[operator]
        elif isinstance(rule, annotated_types.Lt):
            found.append(rule.lt)
    return [str(value) for value in found]


def implied(field: FieldInfo) -> list[str]:
    """Bad values for a setting's type and bounds."""
    kind = field.annotation
    if kind is int:
        return ["lots", "1.5", *_past_bounds(field)]
    if kind is float:  # inf and nan are no number of seconds or bytes
        return ["lots", "inf", "-inf", "nan", *_past_bounds(field)]
    if kind is bool:
        return ["maybe"]
    if typing.get_origin(kind) is typing.Literal:
        return ["verbose"]
    if any(getattr(rule, "pattern", None) for rule in field.metadata):
        return ["not this!"]
    if kind == list[float]:  # JSON
        return ["lots"]
    return []


def cases() -> list[tuple[str, str]]:
    return [
        (name, value)
        for name, field in Settings.model_fields.items()
        for value in dict.fromkeys([*implied(field), *SPECIFIC.get(name, [])])
    ]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("RANKD_"):
            monkeypatch.delenv(name)
    return monkeypatch


def refusal(
    env: pytest.MonkeyPatch, values: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> str:
    """The line `rankd serve` would exit 3 with, under ``values``."""
    for name, value in values.items():
        env.setenv(name, value)
    capsys.readouterr()
    with pytest.raises(typer.Exit) as exited:
        load_settings("rankd serve", None)
    assert exited.value.exit_code == 3
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith("rankd serve: RANKD_"), lines[0]
    assert SECRET not in lines[0], lines[0]
    assert "Traceback" not in err
    return lines[0]


def test_every_setting_has_bad_values_or_a_reason_for_none() -> None:
    walked = {name for name, _ in cases()}
    for name in Settings.model_fields:
        assert (name in walked) != (name in NO_INVALID_VALUE), (
            f"RANKD_{name.upper()}: add its bad values to SPECIFIC, or say in "
            "NO_INVALID_VALUE why it has none"
        )
    assert set(SPECIFIC) | set(NO_INVALID_VALUE) <= set(Settings.model_fields)


def test_the_defaults_pass(clean_env: pytest.MonkeyPatch) -> None:
    assert load_settings("rankd serve", None).data_dir == Path(".rankd")
    clean_env.setenv("RANKD_DATA_DIR", "")  # empty, like unset
    assert load_settings("rankd serve", None).data_dir == Path(".rankd")


@pytest.mark.parametrize(("name", "value"), cases(), ids=lambda v: repr(v)[:40])
def test_a_bad_value_is_one_line_naming_its_variable(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, value: str
) -> None:
    variable = f"RANKD_{name.upper()}"
    line = refusal(clean_env, {variable: value}, capsys)
    assert variable in line, line


@pytest.mark.parametrize(("values", "words"), TOGETHER, ids=lambda v: str(v)[:50])
def test_settings_refused_together_are_named_together(
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    values: dict[str, str],
    words: list[str],
) -> None:
    line = refusal(clean_env, values, capsys)
    for word in words:
        assert word in line, (word, line)


def test_a_url_password_is_never_shown(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = refusal(clean_env, {"RANKD_NATS_URL": f"nats://u:{SECRET}@h:zz,nats://h:1"}, capsys)
    assert "nats://***@h:zz" in line, line


@pytest.mark.parametrize(
    ("env", "given", "words"),
    [
        ({}, {"stream_replicas": 3}, ["RANKD_STREAM_REPLICAS=3", "--topology cluster"]),
        ({}, {"redis_read_from_replicas": True}, ["RANKD_REDIS_READ_FROM_REPLICAS"]),
        # read by the embedded Redis itself: checked again there
        ({"RANKD_REDIS_MAX_MEMORY": "lots"}, {}, ["RANKD_REDIS_MAX_MEMORY", "512mb"]),
    ],
)
def test_what_the_embedded_servers_cannot_do_is_refused_before_they_start(
    clean_env: pytest.MonkeyPatch,
    tmp_path: Path,
    env: dict[str, str],
    given: dict[str, object],
    words: list[str],
) -> None:
    """What only the embedded servers' shape decides (embedded/startup.py: the single
    topology), refused before any starts, with no RANKD_*_URL set."""
    settings = Settings(data_dir=tmp_path / "d", **given)  # type: ignore[arg-type]
    for name, value in env.items():
        clean_env.setenv(name, value)

    def starting() -> None:
        raise AssertionError("embedded servers would start")

    wanted = startup.Wanted("rankd serve", serving=True, before_start=starting)
    with (
        pytest.raises(startup.StartupRefused) as refused,
        startup.services(settings, wanted, note=lambda _: None),
    ):
        raise AssertionError("started")
    line = str(refused.value)
    assert "\n" not in line and line.startswith("rankd serve: "), line
    for word in words:
        assert word in line, (word, line)
    assert not (tmp_path / "d" / "redis").exists()


def test_a_data_dir_flag_naming_a_file_is_refused_before_anything_starts(
    clean_env: pytest.MonkeyPatch,
) -> None:
    settings = Settings().model_copy(update={"data_dir": Path(A_FILE)})  # as --data-dir does
    wanted = startup.Wanted("rankd serve", serving=True)
    with (
        pytest.raises(startup.StartupRefused, match="is a file, not a folder"),
        startup.services(settings, wanted, note=lambda _: None),
    ):
        raise AssertionError("started")
