"""Time windows and their periods, all in UTC.

Period ids: ``all-time``, ``2026-11-03T18`` (hourly), ``2026-11-03`` (daily), ``2026-W45``
(ISO week), ``2026-11`` (monthly), ``current`` (rolling-7d). A period is ``open`` until its
end plus the board's grace, then ``closed``; all-time and rolling-7d never end.

``rolling-7d`` is the last seven UTC days, today included, in one period that never closes:
a run counts if it ended on one of those days when it was received, and leaves when its
day is seven days old (services/rolling.py recomputes the period then).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Literal, NamedTuple

from rankd.formats import clip

Window = Literal["all-time", "daily", "weekly", "monthly", "hourly", "scheduled", "rolling-7d"]
# "scheduled": a board's schedule's occurrences (rankd/schedules.py); its periods are the
# board's own, so boards.BoardConfig resolves them (period_at, period_of), never this module
WINDOWS: tuple[Window, ...] = (
    "all-time",
    "daily",
    "weekly",
    "monthly",
    "hourly",
    "scheduled",
    "rolling-7d",
)
ALL_TIME = "all-time"
ROLLING = "rolling-7d"
ROLLING_PERIOD_ID = "current"
ROLLING_DAYS = 7
# the windows whose one period never ends (no close, no freeze, no archive)
ENDLESS = frozenset({ALL_TIME, ROLLING})

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
# All-time composites count time from a fixed epoch; a century of room.
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
EPOCH_MS = int(EPOCH.timestamp() * 1000)
ALL_TIME_SPAN_MS = 36_525 * DAY_MS

# Longest period per window: the codec's time bits must cover it. A rolling window's
# composites count from the epoch like all-time's, so entries of different days compare.
SPAN_MS: dict[str, int] = {
    "all-time": ALL_TIME_SPAN_MS,
    "rolling-7d": ALL_TIME_SPAN_MS,
    "daily": DAY_MS,
    "weekly": 7 * DAY_MS,
    "monthly": 31 * DAY_MS,
    "hourly": HOUR_MS,
}

_HOURLY = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2})")
_DAILY = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_WEEKLY = re.compile(r"([0-9]{4})-W([0-9]{2})")
_MONTHLY = re.compile(r"([0-9]{4})-([0-9]{2})")
# Runs end from 2020 on, and all-time composites cover a century from then: no period
# outside these years can hold data (and the calendar overflows near year 9999).
FIRST_YEAR = EPOCH.year
LAST_YEAR = EPOCH.year + 99


class PeriodRef(NamedTuple):
    """One board period's standings, as the stores name it: the unit a sorted set holds.

    ``segment`` is "" for the board's global standings, else ``"<dimension>:<value>"``.
    """

    board: str
    window: str
    period: str
    segment: str = ""


class PeriodError(ValueError):
    """A period id that is malformed or does not belong to the window."""


@dataclass(frozen=True, slots=True)
class Period:
    window: str
    id: str
    start_ms: int
    end_ms: int  # exclusive; for all-time the end of the codec's range

    def status(self, now_ms: int, grace_ms: int) -> Literal["open", "closed"]:
        if self.window in ENDLESS:
            return "open"
        return "open" if now_ms < self.end_ms + grace_ms else "closed"


def _ms(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() * 1000)


def _month_after(d: date) -> date:
    return date(d.year + (d.month == 12), d.month % 12 + 1, 1)


def _build(window: str, start: date) -> Period:
    if window == "daily":
        end = start + timedelta(days=1)
        pid = start.isoformat()
    elif window == "weekly":
        end = start + timedelta(days=7)
        year, week, _ = start.isocalendar()
        pid = f"{year}-W{week:02d}"
    elif window == "monthly":
        end = _month_after(start)
        pid = f"{start.year}-{start.month:02d}"
    else:
        raise PeriodError(f"unknown window {clip(window)!r}")
    return Period(window, pid, _ms(start), _ms(end))


ALL_TIME_PERIOD = Period(ALL_TIME, ALL_TIME, EPOCH_MS, EPOCH_MS + ALL_TIME_SPAN_MS)
ROLLING_PERIOD = Period(ROLLING, ROLLING_PERIOD_ID, EPOCH_MS, EPOCH_MS + ALL_TIME_SPAN_MS)


def rolling_first_day(at_ms: int) -> int:
    """The oldest day (days since 1970-01-01, UTC) the rolling window holds at ``at_ms``."""
    return at_ms // DAY_MS - (ROLLING_DAYS - 1)


def period_at(window: str, at_ms: int) -> Period:
    """The period of ``window`` that contains the instant ``at_ms``."""
    if window == ALL_TIME:
        return ALL_TIME_PERIOD
    if window == ROLLING:
        return ROLLING_PERIOD
    if window == "hourly":
        return _period_of_hour(at_ms // HOUR_MS)
    return _period_of_day(window, at_ms // DAY_MS)


@lru_cache(maxsize=4096)
def _period_of_hour(hour_number: int) -> Period:
    start = datetime.fromtimestamp(hour_number * HOUR_MS / 1000, tz=UTC)
    pid = f"{start.date().isoformat()}T{start.hour:02d}"
    return Period("hourly", pid, hour_number * HOUR_MS, (hour_number + 1) * HOUR_MS)


@lru_cache(maxsize=4096)
def _period_of_day(window: str, day_number: int) -> Period:
    # every submit asks this per window; a day's answer never changes
    day = date(1970, 1, 1) + timedelta(days=day_number)
    if window == "daily":
        return _build(window, day)
    if window == "weekly":
        return _build(window, day - timedelta(days=day.weekday()))
    if window == "monthly":
        return _build(window, day.replace(day=1))
    raise PeriodError(f"unknown window {clip(window)!r}")


def parse_period(window: str, period_id: str) -> Period:
    """The period named ``period_id`` in ``window``; PeriodError if it is not one."""
    pattern = {"hourly": _HOURLY, "daily": _DAILY, "weekly": _WEEKLY, "monthly": _MONTHLY}.get(
        window
    )
    match = pattern.fullmatch(period_id) if pattern is not None else None
    if match is not None and not FIRST_YEAR <= int(match[1]) <= LAST_YEAR:
        raise PeriodError(
            f"period {clip(period_id)!r} is outside the years {FIRST_YEAR}..{LAST_YEAR} that runs "
            "can fall in"
        )
    if window == ROLLING:
        if period_id != ROLLING_PERIOD_ID:
            raise PeriodError(f"the {ROLLING} window has only the period {ROLLING_PERIOD_ID!r}")
        return ROLLING_PERIOD
    try:
        if window == ALL_TIME:
            if period_id != ALL_TIME:
                raise PeriodError("the all-time window has only the period 'all-time'")
            return ALL_TIME_PERIOD
        if window == "hourly" and match:
            day = date(int(match[1]), int(match[2]), int(match[3]))
            if int(match[4]) > 23:
                raise ValueError("hour past 23")
            return _period_of_hour(_ms(day) // HOUR_MS + int(match[4]))
        if window == "daily" and match:
            return _build(window, date(int(match[1]), int(match[2]), int(match[3])))
        if window == "weekly" and match:
            return _build(window, date.fromisocalendar(int(match[1]), int(match[2]), 1))
        if window == "monthly" and match:
            return _build(window, date(int(match[1]), int(match[2]), 1))
    except ValueError as exc:  # e.g. 2026-02-30 or week 54
        raise PeriodError(f"period {clip(period_id)!r} is not a valid {window} period") from exc
    raise PeriodError(f"period {clip(period_id)!r} is not a valid {window} period id")


_OCCURRENCE = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})T([0-9]{2})([0-9]{2})Z")


def parse_occurrence_id(pid: str) -> int:
    """A scheduled occurrence's start from its id, its start in basic form (20261205T1800Z);
    PeriodError if malformed. Which occurrences exist is the board's schedule's business
    (rankd/schedules.py)."""
    match = _OCCURRENCE.fullmatch(pid)
    if match is None:
        raise PeriodError(
            f"period {clip(pid)!r} is not an occurrence id (its start, such as 20261205T1800Z)"
        )
    try:
        year, month, day, hour, minute = (int(g) for g in match.groups())
        moment = datetime(year, month, day, hour, minute, tzinfo=UTC)
    except ValueError as exc:
        raise PeriodError(f"period {clip(pid)!r} is not a valid time") from exc
    return int(moment.timestamp() * 1000)


def start_ms_of(window: str, period_id: str) -> int:
    """When a period of any window starts (a scheduled one: from its id alone)."""
    if window == "scheduled":
        return parse_occurrence_id(period_id)
    return parse_period(window, period_id).start_ms


def previous(period: Period) -> Period:
    """The period just before ``period`` (all-time and rolling-7d have none: returns
    itself)."""
    if period.window in ENDLESS:
        return period
    return period_at(period.window, period.start_ms - 1)
