"""What each endpoint answers, typed (CONTRACT.md). The read results are the service's own
(rankd.results); the rest are declared here."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from rankd.results import (
    Around,
    Ban,
    BanInfo,
    Bans,
    BoardDeleted,
    Entry,
    FriendEntry,
    Friends,
    HoldDecision,
    PeriodInfo,
    Periods,
    PlayerErased,
    PlayerStanding,
    RankOf,
    Segments,
    SegmentValue,
    SegmentValues,
    Standing,
    Top,
)

__all__ = [
    "Around",
    "Ban",
    "BanInfo",
    "Bans",
    "BatchItem",
    "Board",
    "BoardDeleted",
    "Entry",
    "ErrorBody",
    "FriendEntry",
    "Friends",
    "Health",
    "Hold",
    "HoldDecision",
    "PeriodInfo",
    "Periods",
    "PlayerErased",
    "PlayerStanding",
    "Profile",
    "RankOf",
    "Ready",
    "Run",
    "SegmentValue",
    "SegmentValues",
    "Segments",
    "Standing",
    "SubmitResult",
    "Top",
]


class Board(TypedDict):
    board_id: str
    windows: list[str]
    order: Literal["desc", "asc"]
    policy: Literal["best", "sum"]
    max_score: int
    max_run_score: int
    shards: int
    hold_top: int
    grace_seconds: int
    retention_days: dict[str, int]
    segments: list[str]
    created_at: str
    tie_resolution_ms: dict[str, int]
    score_format: Literal["integer", "duration_ms", "decimal_1", "decimal_2", "decimal_3"]


class Run(TypedDict):
    """One run to submit; ``ended_at`` (RFC 3339) and ``segments`` are optional."""

    run_id: str
    player_id: str
    score: int
    ended_at: NotRequired[str]
    segments: NotRequired[dict[str, str]]


class SubmitResult(TypedDict):
    run_id: str
    player_id: str
    score: int
    standings: list[Standing]


class ErrorBody(TypedDict):
    code: str
    message: str


class BatchItem(TypedDict):
    """One run's result in a batch: ``standings``, or ``error`` for a run refused alone."""

    run_id: str | None
    standings: NotRequired[list[Standing]]
    error: NotRequired[ErrorBody]


class Profile(TypedDict):
    player_id: str
    name: str | None
    segments: dict[str, str]
    banned: NotRequired[bool]  # only in an admin key's answer


class Hold(TypedDict):  # the service's HoldInfo
    run_id: str
    player_id: str
    score: int
    window: str
    period: str
    ended_at: str


class Health(TypedDict):
    status: Literal["ok"]


class Ready(TypedDict):
    status: Literal["ready", "degraded", "unavailable"]
    checks: dict[str, str]
    consumer: dict[str, Any] | None
    reasons: NotRequired[list[str]]
