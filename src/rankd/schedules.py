"""A board's schedule (CONTRACT v1.3, scheduled boards): the occurrences of its ``scheduled``
window, each a period of its own, all in UTC.

``starts_at`` is the first occurrence's start; ``every`` (an ISO 8601 duration, ``PT1H`` to
``P1Y``; absent: one occurrence) the time between starts; ``duration`` how long each stays
open (default ``every``; at most ``every``, so occurrences never overlap and a run falls in
at most one); ``ends_at``: no occurrence starts at or after it. Months and years are
calendar ones (a monthly cup starting on the 31st runs on the last day of shorter months),
so the n-th start is ``starts_at`` plus n times ``every``, not a sum of n steps. Starts and
durations are whole minutes: an occurrence's period id is its start in ISO 8601 basic form,
``20261205T1800Z``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from rankd.errors import InvalidRequest
from rankd.formats import clip, format_time, parse_time
from rankd.periods import EPOCH_MS, LAST_YEAR, Period, PeriodError, parse_occurrence_id

SCHEDULED = "scheduled"
MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
_DURATION = re.compile(
    r"P(?:([0-9]{1,4})Y)?(?:([0-9]{1,4})M)?(?:([0-9]{1,4})W)?(?:([0-9]{1,5})D)?"
    r"(?:T(?:([0-9]{1,6})H)?(?:([0-9]{1,7})M)?)?"
)
YEAR_LONGEST_MS = 12 * 31 * DAY_MS  # P1Y, as Duration.longest_ms counts it
# the most occurrences a schedule change is compared over (hourly for about 11 years)
MAX_COMPARED = 100_000


@dataclass(frozen=True, slots=True)
class Duration:
    """An ISO 8601 duration as calendar months and a fixed part in ms."""

    text: str
    months: int
    ms: int

    @property
    def longest_ms(self) -> int:
        """An upper bound of its length in ms (a month counted as 31 days)."""
        return self.months * 31 * DAY_MS + self.ms

    @property
    def shortest_ms(self) -> int:
        return self.months * 28 * DAY_MS + self.ms

    def after(self, start_ms: int, times: int = 1) -> int:
        """``start_ms`` plus ``times`` of this duration (months first, on the calendar)."""
        moment = datetime.fromtimestamp(start_ms / 1000, tz=UTC)
        if self.months:
            moment = _add_months(moment, self.months * times)
        return int(moment.timestamp() * 1000) + self.ms * times


def _add_months(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    if year > LAST_YEAR + 1:
        raise OverflowError("past the years runs can fall in")
    last_day = (datetime(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)).day
    return moment.replace(year=year, month=month, day=min(moment.day, last_day))


def parse_duration(value: object, field: str) -> Duration:
    """An ISO 8601 duration of years, months, weeks, days, hours and minutes."""
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None or not any(match.groups()) or value in ("P", "PT") or str(value).endswith("T"):
        raise InvalidRequest(
            f"{field} must be an ISO 8601 duration in whole minutes or more, such as PT1H, P1D,"
            " P1W or P1M"
        )
    years, months, weeks, days, hours, minutes = (int(g or 0) for g in match.groups())
    ms = ((weeks * 7 + days) * 24 + hours) * HOUR_MS + minutes * MINUTE_MS
    assert isinstance(value, str)
    return Duration(value, years * 12 + months, ms)


@dataclass(frozen=True, slots=True)
class Schedule:
    starts_ms: int
    every: Duration | None
    duration: Duration
    ends_ms: int | None

    def start_of(self, n: int) -> int:
        """The n-th occurrence's start (0: the first)."""
        if n == 0 or self.every is None:
            return self.starts_ms
        return self.every.after(self.starts_ms, n)

    def _period(self, n: int) -> Period:
        """The n-th occurrence. One as long as ``every`` ends where the next starts (on the
        calendar: a monthly one from the 31st ends on the last day of a short month and the
        next starts then, with no gap between them)."""
        start = self.start_of(n)
        every = self.every
        if every is not None and (every.months, every.ms) == (
            self.duration.months,
            self.duration.ms,
        ):
            try:
                return Period(SCHEDULED, period_id(start), start, self.start_of(n + 1))
            except OverflowError:
                pass
        return Period(SCHEDULED, period_id(start), start, self.duration.after(start))

    def _index_at(self, at_ms: int) -> int | None:
        """The index of the last occurrence starting at or before ``at_ms`` (None: none has,
        or the schedule ended before it)."""
        if at_ms < self.starts_ms:
            return None
        n = 0
        if self.every is not None:
            # from below: the shortest step never overshoots, then walk up
            n = max(0, (at_ms - self.starts_ms) // max(self.every.longest_ms, 1))
            try:
                while self.start_of(n + 1) <= at_ms:
                    n += 1
            except OverflowError:
                pass
        if self.ends_ms is not None and self.start_of(n) >= self.ends_ms:
            n = self._last_index()
        return n

    def _last_index(self) -> int:
        """The last occurrence's index, for a schedule with an end."""
        assert self.ends_ms is not None
        if self.every is None:
            return 0
        n = max(0, (self.ends_ms - self.starts_ms) // max(self.every.longest_ms, 1) - 1)
        while self.start_of(n + 1) < self.ends_ms:
            n += 1
        return n

    def occurrence_at(self, at_ms: int) -> Period | None:
        """The occurrence open at ``at_ms`` (None: between occurrences, before the first or
        after the last)."""
        n = self._index_at(at_ms)
        if n is None:
            return None
        period = self._period(n)
        return period if period.start_ms <= at_ms < period.end_ms else None

    def latest_started(self, at_ms: int) -> Period | None:
        """The last occurrence that has started by ``at_ms``, open or not."""
        n = self._index_at(at_ms)
        return None if n is None else self._period(n)

    def next_after(self, at_ms: int) -> Period | None:
        """The first occurrence starting after ``at_ms`` (None: the schedule has ended)."""
        n = self._index_at(at_ms)
        if n is None:
            following = 0
        elif self.every is None:
            return None
        else:
            following = n + 1
        try:
            start = self.start_of(following)
        except OverflowError:
            return None
        if self.ends_ms is not None and start >= self.ends_ms:
            return None
        return self._period(following)

    def occurrence(self, pid: str) -> Period:
        """The occurrence named ``pid``; PeriodError if the schedule has none such."""
        start = parse_occurrence_id(pid)
        found = self.latest_started(start)
        if found is None or found.start_ms != start:
            raise PeriodError(f"period {clip(pid)!r} is not an occurrence of this board's schedule")
        return found

    def occurrences_between(self, from_ms: int, to_ms: int) -> list[Period]:
        """The occurrences starting from the one open (or last started) at ``from_ms`` up
        to ``to_ms`` (bounded by MAX_COMPARED)."""
        last = self._index_at(to_ms)
        if last is None:
            return []
        first = self._index_at(from_ms) or 0
        return [self._period(n) for n in range(first, min(last + 1, first + MAX_COMPARED))]

    def starts_until(self, at_ms: int) -> list[int]:
        """Every occurrence start at or before ``at_ms`` (bounded by MAX_COMPARED)."""
        n = self._index_at(at_ms)
        return [] if n is None else [self.start_of(i) for i in range(min(n + 1, MAX_COMPARED))]

    def as_json(self) -> dict[str, Any]:
        return {
            "starts_at": format_time(self.starts_ms),
            "every": None if self.every is None else self.every.text,
            "duration": self.duration.text,
            "ends_at": None if self.ends_ms is None else format_time(self.ends_ms),
        }


def period_id(start_ms: int) -> str:
    return datetime.fromtimestamp(start_ms / 1000, tz=UTC).strftime("%Y%m%dT%H%MZ")


def parse_schedule(value: object) -> Schedule:
    """A board's ``schedule`` object; InvalidRequest naming the first bad field."""
    if not isinstance(value, dict):
        raise InvalidRequest(
            'schedule must be an object, e.g. {"starts_at": "2026-12-05T18:00:00Z",'
            ' "every": "P1D", "duration": "PT2H"}'
        )
    unknown = sorted(set(value) - {"starts_at", "every", "duration", "ends_at"})
    if unknown:
        raise InvalidRequest(
            f"unknown schedule field {clip(str(unknown[0]))!r}; a schedule has starts_at,"
            " every, duration, ends_at"
        )
    starts = parse_time(value.get("starts_at"), "schedule.starts_at")
    if starts < EPOCH_MS or starts % MINUTE_MS:
        raise InvalidRequest("schedule.starts_at must be a whole minute, from 2020 on")
    every = None
    if value.get("every") is not None:
        every = parse_duration(value["every"], "schedule.every")
        if every.shortest_ms < HOUR_MS or every.longest_ms > YEAR_LONGEST_MS:
            raise InvalidRequest("schedule.every must be from PT1H to P1Y")
    if value.get("duration") is None:
        if every is None:
            raise InvalidRequest("schedule.duration is required when schedule.every is absent")
        duration = every
    else:
        duration = parse_duration(value["duration"], "schedule.duration")
        if duration.shortest_ms < MINUTE_MS or duration.longest_ms > YEAR_LONGEST_MS:
            raise InvalidRequest("schedule.duration must be at most P1Y")
        same = every is not None and (duration.months, duration.ms) == (every.months, every.ms)
        # occurrences must not overlap (a run belongs to one at most), in any month
        if every is not None and not same and duration.longest_ms > every.shortest_ms:
            raise InvalidRequest("schedule.duration must not be longer than schedule.every")
    ends = None
    if value.get("ends_at") is not None:
        ends = parse_time(value["ends_at"], "schedule.ends_at")
        if ends <= starts:
            raise InvalidRequest("schedule.ends_at must be after schedule.starts_at")
    return Schedule(starts, every, duration, ends)


def unchanged_until(old: Schedule, new: Schedule, now_ms: int) -> bool:
    """Whether ``new`` keeps every occurrence of ``old`` that has started by ``now_ms`` as it
    was (same start and end): a change may only affect occurrences still to come."""
    before = old.starts_until(now_ms)
    same_length = (old.duration.months, old.duration.ms) == (new.duration.months, new.duration.ms)
    return new.starts_until(now_ms) == before and (not before or same_length)
