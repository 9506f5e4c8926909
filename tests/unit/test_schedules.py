"""A schedule's occurrences (rankd/schedules.py): ids, calendar months without gaps, the
open, last and next occurrence, and the checks on a schedule."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankd.errors import InvalidRequest
from rankd.formats import format_time
from rankd.periods import PeriodError
from rankd.schedules import parse_schedule, period_id

starts = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 12, 31)).map(
    lambda d: d.replace(second=0, microsecond=0, tzinfo=UTC)
)
everies = st.sampled_from(["PT1H", "PT6H", "P1D", "P1W", "P1M", "P3M", "P1Y", "P1DT12H"])


@given(starts, everies, st.integers(min_value=0, max_value=40))
def test_occurrences_as_long_as_every_leave_no_gap(start: datetime, every: str, n: int) -> None:
    schedule = parse_schedule({"starts_at": start.isoformat(), "every": every})
    this, following = schedule._period(n), schedule._period(n + 1)
    assert this.end_ms == following.start_ms
    assert schedule.occurrence_at(this.end_ms - 1) == this
    assert schedule.occurrence_at(this.end_ms) == following
    assert schedule.occurrence(this.id) == this
    assert schedule.next_after(this.start_ms) == following


def test_a_monthly_cup_from_the_31st_runs_on_the_last_day_of_short_months() -> None:
    schedule = parse_schedule({"starts_at": "2026-01-31T18:00:00Z", "every": "P1M"})
    ids = [schedule._period(n).id for n in range(4)]
    assert ids == ["20260131T1800Z", "20260228T1800Z", "20260331T1800Z", "20260430T1800Z"]
    march = schedule.occurrence_at(int(datetime(2026, 3, 29, tzinfo=UTC).timestamp() * 1000))
    assert march is not None and march.id == "20260228T1800Z"
    with pytest.raises(PeriodError):
        schedule.occurrence("20260428T1800Z")


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def test_gaps_ends_and_one_occurrence() -> None:
    daily = parse_schedule(
        {
            "starts_at": "2026-12-05T18:00:00Z",
            "every": "P1D",
            "duration": "PT2H",
            "ends_at": "2026-12-08T00:00:00Z",
        }
    )
    assert daily.occurrence_at(at("2026-12-06T19:00:00+00:00")).id == "20261206T1800Z"  # type: ignore[union-attr]
    assert daily.occurrence_at(at("2026-12-06T21:00:00+00:00")) is None  # between
    assert daily.latest_started(at("2027-01-01T00:00:00+00:00")).id == "20261207T1800Z"  # type: ignore[union-attr]
    assert daily.next_after(at("2026-12-07T19:00:00+00:00")) is None  # ends_at
    once = parse_schedule({"starts_at": "2026-12-05T18:00:00Z", "duration": "P2D"})
    assert once.next_after(at("2026-12-01T00:00:00+00:00")).id == "20261205T1800Z"  # type: ignore[union-attr]
    assert once.next_after(at("2026-12-06T00:00:00+00:00")) is None
    assert period_id(at("2026-12-05T18:07:00+00:00")) == "20261205T1807Z"
    assert format_time(once.starts_ms) == "2026-12-05T18:00:00.000Z"


@pytest.mark.parametrize(
    "bad",
    [
        {"starts_at": "2026-12-05T18:00:30Z", "every": "P1D"},
        {"starts_at": "2026-12-05T18:00:00Z"},
        {"starts_at": "2026-12-05T18:00:00Z", "every": "PT30M"},
        {"starts_at": "2026-12-05T18:00:00Z", "every": "P1D", "duration": "P2D"},
        {"starts_at": "2026-12-05T18:00:00Z", "every": "P1M", "duration": "P30D"},
        {"starts_at": "2026-12-05T18:00:00Z", "every": "P2Y"},
        {"starts_at": "2026-12-05T18:00:00Z", "every": "P"},
        {"starts_at": "2026-12-05T18:00:00Z", "every": "P1DT"},
        {"starts_at": "2026-12-05T18:00:00Z", "every": "P1D\n"},
        {"starts_at": "2026-12-05T18:00:00Z", "every": "P1D", "ends_at": "2026-12-01T00:00:00Z"},
        {"starts_at": "2026-12-05T18:00:00Z", "every": "P1D", "extra": 1},
        "P1D",
    ],
)
def test_bad_schedules_are_refused(bad: object) -> None:
    with pytest.raises(InvalidRequest):
        parse_schedule(bad)
