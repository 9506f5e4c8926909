"""A league board's rules (CONTRACT v1.3 "Leagues"): its tiers, cohorts and the moves a
frozen period makes, as pure functions the services, the SQL and the tests share.

A league turns a board's one periodic window into seasons. A player's first counted run
of a period places them in their tier: the tier's ``ordinal``-th placed player is in cohort
``ordinal // cohort_size``, so cohorts fill one after another in the order placements were
made (services/leagues.py). At the freeze, each cohort's top ``promote`` move up a tier
and its bottom ``relegate`` down, promotion decided first; the first tier relegates no one,
the last promotes no one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, cast

from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from rankd.errors import InvalidRequest
from rankd.formats import clip
from rankd.periods import SPAN_MS

Zone = Literal["promote", "stay", "relegate"]
LeagueWindow = Literal["hourly", "daily", "weekly", "monthly"]
Moved = Literal["up", "down", "stay"]
# the windows a league may season over: periods that end (not all-time, rolling-7d, nor a
# schedule's occurrences, whose gaps leave "the next period" undefined)
LEAGUE_WINDOWS = ("hourly", "daily", "weekly", "monthly")
MAX_TIERS = 16
# periods of a league window a season pass looks at for players waiting for their tier: a
# grace longer than this many periods (398 hours on an hourly league) is refused
MAX_OPEN_PERIODS = 400
MIN_COHORT, MAX_COHORT = 5, 1000
TIER_NAME = re.compile(r"[A-Za-z0-9_]{1,32}")
# a cohort's id in paths: "<tier name>-<n>", n from 1
COHORT_ID = re.compile(r"([A-Za-z0-9_]{1,32})-([1-9][0-9]{0,8})")


class LeagueSettings(TypedDict):
    # a board's league field, as a PUT body gives it and a board's answer shows it
    window: LeagueWindow
    tiers: list[str]
    cohort_size: NotRequired[int]
    promote: NotRequired[int]
    relegate: NotRequired[int]


@dataclass(frozen=True)
class League:
    window: str
    tiers: tuple[str, ...]
    cohort_size: int = 30
    promote: int = 5
    relegate: int = 5

    def as_json(self) -> LeagueSettings:
        return {
            "window": cast(LeagueWindow, self.window),
            "tiers": list(self.tiers),
            "cohort_size": self.cohort_size,
            "promote": self.promote,
            "relegate": self.relegate,
        }

    @property
    def last_tier(self) -> int:
        return len(self.tiers) - 1

    def cohort_id(self, tier: int, cohort: int) -> str:
        return f"{self.tiers[tier]}-{cohort + 1}"

    def parse_cohort_id(self, text: str) -> tuple[int, int]:
        """(tier index, cohort from 0) of a cohort id; InvalidRequest if it names none."""
        found = COHORT_ID.fullmatch(text)
        if found is None or found.group(1) not in self.tiers:
            raise InvalidRequest(
                f"cohort {clip(text)!r} is not <tier>-<n> with a tier of this league"
                f" ({', '.join(self.tiers)})"
            )
        return self.tiers.index(found.group(1)), int(found.group(2)) - 1

    def promoted(self, tier: int, ranked: int) -> int:
        """How many of a cohort of ``ranked`` ranked players move up from ``tier``."""
        return 0 if tier >= self.last_tier else min(self.promote, ranked)

    def zone(self, tier: int, rank: int, ranked: int) -> Zone:
        """Where the ``rank``-th (from 1) of ``ranked`` players of a cohort of ``tier``
        stands: promotion decided first, relegation among the rest."""
        promoted = self.promoted(tier, ranked)
        if rank <= promoted:
            return "promote"
        if tier > 0 and rank > ranked - self.relegate:
            return "relegate"
        return "stay"

    def moved(self, tier: int, rank: int | None, ranked: int) -> Moved:
        """The move a frozen period makes: a player without a ranked entry (no counted
        run shown, or banned) keeps their tier."""
        if rank is None:
            return "stay"
        zone = self.zone(tier, rank, ranked)
        return "up" if zone == "promote" else "down" if zone == "relegate" else "stay"


def parse_league(value: object, windows: list[str], grace_seconds: int = 0) -> League:
    """A board's ``league`` field, checked against the board's ``windows`` and grace."""
    if not isinstance(value, dict):
        raise InvalidRequest(
            'league must be an object, e.g. {"window": "weekly", "tiers": ["bronze", "silver",'
            ' "gold"], "cohort_size": 30, "promote": 5, "relegate": 5}'
        )
    unknown = sorted(set(value) - {"window", "tiers", "cohort_size", "promote", "relegate"})
    if unknown:
        raise InvalidRequest(f"league: unknown field {clip(str(unknown[0]))!r}")
    window = value.get("window")
    if window not in LEAGUE_WINDOWS:
        raise InvalidRequest(f"league.window must be one of {', '.join(LEAGUE_WINDOWS)}")
    others = [w for w in windows if w != "all-time"]
    if others != [window]:
        raise InvalidRequest(
            f"a league board's windows are its league window {window!r} and optionally"
            f" all-time; this board has {', '.join(windows)}"
        )
    most = (MAX_OPEN_PERIODS - 2) * SPAN_MS[window] // 1000
    if grace_seconds > most:
        raise InvalidRequest(
            f"a {window} league takes grace_seconds up to {most}: players wait for their tier"
            " until the previous period's grace is over"
        )
    tiers = value.get("tiers")
    if (
        not isinstance(tiers, list)
        or not 1 <= len(tiers) <= MAX_TIERS
        or not all(isinstance(t, str) and TIER_NAME.fullmatch(t) for t in tiers)
        or len(set(tiers)) != len(tiers)
    ):
        raise InvalidRequest(
            f"league.tiers must be 1..{MAX_TIERS} distinct names matching [A-Za-z0-9_]{{1,32}},"
            " lowest first"
        )
    size = _int(value, "cohort_size", 30, MIN_COHORT, MAX_COHORT)
    # 5 each unless the cohort is too small for it: never a default that is refused
    promote = _int(value, "promote", min(5, size // 2), 0, size // 2)
    relegate = _int(value, "relegate", min(5, size // 2), 0, size // 2)
    return League(window, tuple(tiers), size, promote, relegate)


def _int(value: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    got = value.get(name, default)
    if not isinstance(got, int) or isinstance(got, bool) or not low <= got <= high:
        raise InvalidRequest(f"league.{name} must be an integer in {low}..{high}")
    return got
