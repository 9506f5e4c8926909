"""Period ids and bounds in UTC, ISO weeks, grace and parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankd.periods import (
    ALL_TIME,
    EPOCH_MS,
    SPAN_MS,
    PeriodError,
    parse_period,
    period_at,
    previous,
    rolling_first_day,
)


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def test_ids_for_one_instant() -> None:
    at = ms("2026-11-03T18:22:07.123+00:00")
    assert period_at("daily", at).id == "2026-11-03"
    assert period_at("weekly", at).id == "2026-W45"
    assert period_at("monthly", at).id == "2026-11"
    assert period_at("hourly", at).id == "2026-11-03T18"
    assert period_at(ALL_TIME, at).id == "all-time"


def test_an_hour_is_its_utc_hour() -> None:
    hour = period_at("hourly", ms("2026-11-04T01:30:00+02:00"))  # 23:30 UTC the day before
    assert hour.id == "2026-11-03T23"
    assert (hour.start_ms, hour.end_ms) == (
        ms("2026-11-03T23:00:00+00:00"),
        ms("2026-11-04T00:00:00+00:00"),
    )
    assert previous(period_at("hourly", ms("2027-01-01T00:10:00+00:00"))).id == "2026-12-31T23"


def test_offsets_are_converted_to_utc() -> None:
    # 01:00 at +02:00 is 23:00 the previous day in UTC
    assert period_at("daily", ms("2026-11-04T01:00:00+02:00")).id == "2026-11-03"


def test_iso_week_belongs_to_its_iso_year() -> None:
    # 2027-01-01 is a Friday: ISO week 53 of 2026
    week = period_at("weekly", ms("2027-01-01T12:00:00+00:00"))
    assert week.id == "2026-W53"
    assert week.start_ms == ms("2026-12-28T00:00:00+00:00")
    assert week.end_ms == ms("2027-01-04T00:00:00+00:00")


def test_month_bounds_cross_the_year() -> None:
    december = period_at("monthly", ms("2026-12-31T23:59:59.999+00:00"))
    assert (december.start_ms, december.end_ms) == (
        ms("2026-12-01T00:00:00+00:00"),
        ms("2027-01-01T00:00:00+00:00"),
    )


def test_grace_decides_closed() -> None:
    day = parse_period("daily", "2026-11-03")
    grace = 3_600_000
    assert day.status(day.end_ms + grace - 1, grace) == "open"
    assert day.status(day.end_ms + grace, grace) == "closed"
    assert period_at(ALL_TIME, 0).status(10**15, 0) == "open"


@given(
    st.sampled_from(["hourly", "daily", "weekly", "monthly"]),
    st.integers(EPOCH_MS, EPOCH_MS + 90 * 365 * 86_400_000),
)
def test_every_instant_lies_in_its_period_and_ids_round_trip(window: str, at: int) -> None:
    period = period_at(window, at)
    assert period.start_ms <= at < period.end_ms
    assert period.end_ms - period.start_ms <= SPAN_MS[window]
    assert parse_period(window, period.id) == period
    assert previous(period).end_ms == period.start_ms


@pytest.mark.parametrize(
    ("window", "bad"),
    [
        ("daily", "2026-02-30"),
        ("daily", "2026-11"),
        ("weekly", "2026-W54"),
        ("weekly", "2026-45"),
        ("monthly", "2026-13"),
        ("monthly", "2026-11-01"),
        (ALL_TIME, "2026"),
        ("hourly", "2026-11-03"),
        ("hourly", "2026-11-03T24"),
        ("hourly", "2026-11-03T7"),
        ("hourly", "2026-11-03 07"),
        ("hourly", "2026-11-03T07\n"),
        ("daily", "2026-11-03T07"),
        ("rolling-7d", "2026-11-03"),
        ("rolling-7d", "current\n"),
    ],
)
def test_malformed_or_mismatched_ids_are_refused(window: str, bad: str) -> None:
    with pytest.raises(PeriodError):
        parse_period(window, bad)


def test_previous_day() -> None:
    day = period_at("daily", int(datetime(2026, 3, 1, tzinfo=UTC).timestamp() * 1000))
    assert previous(day).id == (datetime(2026, 3, 1) - timedelta(days=1)).date().isoformat()


def test_the_rolling_window_is_one_endless_period_over_the_last_seven_days() -> None:
    at = ms("2026-11-10T18:00:00+00:00")
    current = period_at("rolling-7d", at)
    assert current == parse_period("rolling-7d", "current")
    assert current.id == "current" and current.status(10**15, 0) == "open"
    assert previous(current) == current
    first = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=rolling_first_day(at))
    assert first.date().isoformat() == "2026-11-04"  # the 4th to the 10th: seven days
