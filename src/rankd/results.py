"""What the services answer, typed: the shapes api/schemas.py documents for clients.

TypedDicts rather than classes: the services build plain dicts that orjson renders as they
are, and mypy checks each one against these shapes. tests/unit/test_results.py checks that these
keys and the OpenAPI models' fields stay the same.
"""

from typing import Literal, NotRequired, TypedDict


class Standing(TypedDict):
    window: str
    period: str
    segment: str | None
    status: Literal["ranked", "held", "closed"]
    rank: NotRequired[int]
    score: NotRequired[int]
    achieved_at: NotRequired[str]
    improved: bool
    is_best: bool


class Entry(TypedDict):
    rank: int
    player_id: str
    score: int
    achieved_at: str
    name: str | None


class FriendEntry(Entry):
    position: int


class Head(TypedDict):
    """Which standings a read answers about."""

    board_id: str
    window: str
    period: str


class Top(Head):
    total: int
    entries: list[Entry]


class PlayerStanding(Entry, Head):
    total: int
    percentile: float


class ApproxStanding(PlayerStanding):
    """A player read's answer (api/schemas.py PlayerOut); with accuracy=approx it says
    whether rank (and total) are estimates, and by how many ranks at most the exact rank
    differs (0 when exact)."""

    approximate: NotRequired[bool]
    error_bound: NotRequired[int]


class Around(Head):
    total: int
    entries: list[Entry]


class Friends(Head):
    entries: list[FriendEntry]


class RankOf(Head):
    score: int
    rank: int
    total: int


class PeriodInfo(TypedDict):
    period: str
    status: Literal["open", "closed", "archived"]
    starts_at: str
    ends_at: str


class Periods(TypedDict):
    board_id: str
    window: str
    periods: list[PeriodInfo]


class Ban(TypedDict):
    player_id: str
    banned: bool


class HoldInfo(TypedDict):
    run_id: str
    player_id: str
    score: int
    window: str
    period: str
    ended_at: str


class Holds(TypedDict):
    board_id: str
    holds: list[HoldInfo]


class HoldDecision(TypedDict):
    board_id: str
    run_id: str
    decision: Literal["approved", "rejected"]


class BanInfo(TypedDict):
    player_id: str
    banned_at: str


class Bans(TypedDict):
    bans: list[BanInfo]
    next: str | None


class SegmentValue(TypedDict):
    value: str
    total: int


class SegmentValues(TypedDict):
    dimension: str
    values: list[SegmentValue]


class Segments(Head):
    segments: list[SegmentValues]


class BoardDeleted(TypedDict):
    board_id: str
    deleted: bool


class PlayerErased(TypedDict):
    player_id: str
    erased: bool
