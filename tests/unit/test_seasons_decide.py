"""The season job's decisions without servers: when a period freezes, waits, leaves Redis
or reopens, across day, ISO-week (2026-W53 -> 2027-W01) and month boundaries, with the
clock passed in."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rankd.boards import BoardConfig
from rankd.periods import DAY_MS, parse_period, period_at
from rankd.plan import plan
from rankd.runs import Run
from rankd.services.seasons import closes_at_ms, decide
from rankd.stores.archive import ArchiveState

SETTLE = 15_000
FROZEN = ArchiveState(entries=3, archived=False)
ARCHIVED = ArchiveState(entries=3, archived=True)


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def board(**config: object) -> BoardConfig:
    return BoardConfig("seasons-test", **config)  # type: ignore[arg-type]


def test_the_year_change_crosses_day_iso_week_and_month() -> None:
    last = ms("2026-12-31T23:59:59.999")
    first = ms("2027-01-01T00:00:00.000")
    assert [period_at(w, last).id for w in ("daily", "weekly", "monthly")] == [
        "2026-12-31",
        "2026-W53",
        "2026-12",
    ]
    assert [period_at(w, first).id for w in ("daily", "weekly", "monthly")] == [
        "2027-01-01",
        "2026-W53",  # ISO week 53 of 2026 runs Monday 28 December to Sunday 3 January
        "2027-01",
    ]
    assert period_at("weekly", ms("2027-01-03T23:59:59.999")).id == "2026-W53"
    assert period_at("weekly", ms("2027-01-04T00:00:00.000")).id == "2027-W01"


@pytest.mark.parametrize(
    ("window", "period_id", "closes"),
    [
        ("daily", "2026-12-31", "2027-01-01T01:00:00"),
        ("weekly", "2026-W53", "2027-01-04T01:00:00"),
        ("monthly", "2026-12", "2027-01-01T01:00:00"),
        ("monthly", "2028-02", "2028-03-01T01:00:00"),  # a leap February
    ],
)
def test_a_period_freezes_after_grace_and_settle(window: str, period_id: str, closes: str) -> None:
    b = board(windows=("daily", "weekly", "monthly"), grace_seconds=3600)
    period = parse_period(window, period_id)
    at = ms(closes)
    assert closes_at_ms(b, period) == at
    assert decide(b, period, None, at - 1, SETTLE, None) == "keep"  # inside grace
    assert decide(b, period, None, at, SETTLE, None) == "keep"  # settling
    assert decide(b, period, None, at + SETTLE - 1, SETTLE, None) == "keep"
    assert decide(b, period, None, at + SETTLE, SETTLE, None) == "freeze"


def test_all_time_never_freezes() -> None:
    b = board(windows=("all-time",), grace_seconds=0)
    assert decide(b, parse_period("all-time", "all-time"), None, ms("2119-12-31"), 0, None) == (
        "keep"
    )


def test_a_period_waits_while_runs_received_in_time_are_unapplied() -> None:
    b = board(windows=("daily",), grace_seconds=600)
    period = parse_period("daily", "2026-12-31")
    closes = ms("2027-01-01T00:10:00")
    now = closes + SETTLE
    # the oldest unapplied run was received before the period closed: it may belong here
    assert decide(b, period, None, now, SETTLE, closes - 1) == "wait"
    # received after it closed: it cannot belong to this period
    assert decide(b, period, None, now, SETTLE, closes) == "freeze"
    assert decide(b, period, None, now, SETTLE, None) == "freeze"  # nothing unapplied


def test_late_runs_inside_grace_land_and_after_grace_are_closed() -> None:
    """The job freezes exactly what plan() let in: runs received before grace ended."""
    b = board(windows=("daily", "weekly", "monthly"), grace_seconds=3600)
    ended = ms("2026-12-31T23:00:00")
    inside = {
        t.window: t.disposition
        for t in plan(b, Run("r", "p", 1, ended, ms("2027-01-01T00:59:59.999")))
    }
    after = {
        t.window: t.disposition for t in plan(b, Run("r", "p", 1, ended, ms("2027-01-01T01:00:00")))
    }
    assert inside == {"daily": "apply", "weekly": "apply", "monthly": "apply"}
    assert after == {"daily": "closed", "weekly": "apply", "monthly": "closed"}
    daily = parse_period("daily", "2026-12-31")
    assert decide(b, daily, None, ms("2027-01-01T01:00:00") + SETTLE, SETTLE, None) == "freeze"


def test_retention_decides_when_a_frozen_period_leaves_redis() -> None:
    b = board(windows=("daily",), grace_seconds=60, retention_days={"daily": 2})
    period = parse_period("daily", "2026-12-31")
    leaves = ms("2027-01-01T00:01:00") + 2 * DAY_MS
    assert decide(b, period, FROZEN, leaves - 1, SETTLE, None) == "keep"
    assert decide(b, period, FROZEN, leaves, SETTLE, None) == "expire"
    assert decide(b, period, ARCHIVED, leaves + DAY_MS, SETTLE, None) == "keep"


def test_retention_zero_leaves_redis_as_soon_as_frozen() -> None:
    b = board(windows=("daily",), grace_seconds=0, retention_days={"daily": 0})
    period = parse_period("daily", "2026-12-31")
    now = ms("2027-01-01T00:00:00") + SETTLE
    assert decide(b, period, None, now, SETTLE, None) == "freeze"
    assert decide(b, period, FROZEN, now, SETTLE, None) == "expire"


def test_config_changes_apply_to_existing_periods() -> None:
    period = parse_period("weekly", "2026-W53")
    now = ms("2027-01-10T00:00:00")
    short = board(windows=("weekly",), grace_seconds=0, retention_days={"weekly": 35})
    shorter = board(windows=("weekly",), grace_seconds=0, retention_days={"weekly": 1})
    assert decide(short, period, FROZEN, now, SETTLE, None) == "keep"
    assert decide(shorter, period, FROZEN, now, SETTLE, None) == "expire"
    # a grace raised past now reopens the period, frozen or archived
    longer = board(windows=("weekly",), grace_seconds=30 * 86_400)
    assert decide(longer, period, FROZEN, now, SETTLE, None) == "thaw"
    assert decide(longer, period, ARCHIVED, now, SETTLE, None) == "thaw"
    assert decide(longer, period, None, now, SETTLE, None) == "keep"
