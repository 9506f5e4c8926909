"""Pydantic models of the HTTP shapes, for /openapi.json and /docs.

Hot paths parse and render JSON themselves (orjson, rankd.validation) so these models
document the contract without costing a validation pass per request. Each response model
carries an example (``examples`` in its schema, shown by /docs);
tests/integration/api/test_openapi.py checks every example and real responses of every route
against these schemas. The services' own outputs are typed in rankd/results.py;
tests/unit/test_results.py keeps the two in step.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rankd.formats import PLAYER_ID_PATTERN, RUN_ID_PATTERN

BOARD_EXAMPLE: dict[str, Any] = {
    "board_id": "arena",
    "windows": ["all-time", "weekly"],
    "order": "desc",
    "policy": "best",
    "max_score": 1_000_000_000,
    "max_run_score": 1_000_000_000,
    "shards": 1,
    "hold_top": 0,
    "grace_seconds": 3600,
    "retention_days": {"daily": 8, "weekly": 35, "monthly": 100},
    "segments": ["country"],
    "score_format": "integer",
    "created_at": "2026-11-03T18:00:00.000Z",
    "tie_resolution_ms": {"all-time": 1, "weekly": 1},
}
SUBMIT_EXAMPLE: dict[str, Any] = {
    "run_id": "r-7f3a91",
    "player_id": "48213377",
    "score": 1284500,
    "standings": [
        {
            "window": "all-time",
            "period": "all-time",
            "segment": None,
            "status": "ranked",
            "rank": 1042,
            "score": 1350200,
            "achieved_at": "2026-10-12T09:01:44.000Z",
            "improved": False,
            "is_best": False,
        },
        {
            "window": "weekly",
            "period": "2026-W45",
            "segment": "country:FR",
            "status": "ranked",
            "rank": 88,
            "score": 1284500,
            "achieved_at": "2026-11-03T18:22:07.123Z",
            "improved": True,
            "is_best": True,
        },
    ],
}
HEAD_EXAMPLE: dict[str, Any] = {"board_id": "arena", "window": "weekly", "period": "2026-W45"}
ENTRY_EXAMPLE: dict[str, Any] = {
    "rank": 12,
    "player_id": "48213377",
    "score": 1284500,
    "achieved_at": "2026-11-03T18:22:07.123Z",
    "name": "kai_runs",
}
ScoreFormat = Literal["integer", "duration_ms", "decimal_1", "decimal_2", "decimal_3"]


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"error": {"code": "board_not_found", "message": "board 'arena' does not exist"}}
            ]
        }
    )

    error: ErrorBody


class BoardIn(BaseModel):
    windows: list[Literal["all-time", "daily", "weekly", "monthly"]] | None = None
    order: Literal["desc", "asc"] | None = None
    policy: Literal["best", "sum"] | None = None
    max_score: int | None = Field(None, ge=1, le=2**53 - 1)
    max_run_score: int | None = Field(None, ge=1, le=2**53 - 1)
    shards: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="sorted sets each period is split over (1: unsharded); fixed once it has runs",
    )
    hold_top: int | None = Field(
        None,
        ge=0,
        le=10_000,
        description="a run that would enter the top hold_top is held for review (0: off)",
    )
    grace_seconds: int | None = Field(None, ge=0, le=31_536_000)
    retention_days: dict[str, int] | None = None
    segments: list[str] | None = Field(None, max_length=4)
    score_format: ScoreFormat | None = Field(
        None, description="how pages display a score (display only); `duration_ms`: 1:05.364"
    )


class BoardOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [BOARD_EXAMPLE]})

    board_id: str
    windows: list[str]
    order: str
    policy: str
    max_score: int
    max_run_score: int
    shards: int
    hold_top: int
    grace_seconds: int
    retention_days: dict[str, int]
    segments: list[str]
    score_format: ScoreFormat
    created_at: str
    tie_resolution_ms: dict[str, int]


class BoardsOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"boards": [BOARD_EXAMPLE]}]})

    boards: list[BoardOut]


class RunIn(BaseModel):
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    player_id: str = Field(pattern=PLAYER_ID_PATTERN)
    score: int = Field(ge=0)
    ended_at: str | None = Field(None, description="RFC 3339; default: when the run is received")
    segments: dict[str, str] | None = Field(
        None, description="segment values; dimensions left out come from the player's profile"
    )


class Standing(BaseModel):
    window: str
    period: str
    segment: str | None = Field(
        description='null for the global standings, else "<dimension>:<value>"'
    )
    status: Literal["ranked", "held", "closed"]
    rank: int | None = None
    score: int | None = None
    achieved_at: str | None = None
    improved: bool
    is_best: bool


class SubmitOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [SUBMIT_EXAMPLE]})

    run_id: str
    player_id: str
    score: int
    standings: list[Standing]


class BatchIn(BaseModel):
    runs: list[RunIn] = Field(max_length=1000)


class BatchResult(BaseModel):
    run_id: str | None
    standings: list[Standing] | None = None
    error: ErrorBody | None = None


class BatchOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "results": [
                        {"run_id": "r-7f3a91", "standings": SUBMIT_EXAMPLE["standings"]},
                        {
                            "run_id": "r-7f3a92",
                            "error": {
                                "code": "score_out_of_range",
                                "message": "score is above this board's max_run_score of 1000",
                            },
                        },
                    ]
                }
            ]
        }
    )

    results: list[BatchResult]


class Entry(BaseModel):
    rank: int
    player_id: str
    score: int
    achieved_at: str
    name: str | None


class TopOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{**HEAD_EXAMPLE, "total": 1042311, "entries": [ENTRY_EXAMPLE]}]
        }
    )

    board_id: str
    window: str
    period: str
    total: int
    entries: list[Entry]


class PlayerOut(Entry):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{**HEAD_EXAMPLE, **ENTRY_EXAMPLE, "total": 1042311, "percentile": 99.99}]
        }
    )

    board_id: str
    window: str
    period: str
    total: int
    percentile: float
    approximate: bool | None = Field(
        None, description="with accuracy=approx: whether rank and total are estimates"
    )
    error_bound: int | None = Field(
        None, description="with accuracy=approx: the exact rank is within rank ± this"
    )


class AroundOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{**HEAD_EXAMPLE, "total": 1042311, "entries": [ENTRY_EXAMPLE]}]
        }
    )

    board_id: str
    window: str
    period: str
    total: int
    entries: list[Entry]


class FriendEntry(Entry):
    position: int


class FriendsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{**HEAD_EXAMPLE, "entries": [{**ENTRY_EXAMPLE, "position": 1}]}]
        }
    )

    board_id: str
    window: str
    period: str
    entries: list[FriendEntry]


class RankOfOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{**HEAD_EXAMPLE, "score": 1284500, "rank": 12, "total": 1042311}]
        }
    )

    board_id: str
    window: str
    period: str
    score: int
    rank: int
    total: int


class PeriodOut(BaseModel):
    period: str
    status: Literal["open", "closed", "archived"]
    starts_at: str
    ends_at: str


class PeriodsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "board_id": "arena",
                    "window": "weekly",
                    "periods": [
                        {
                            "period": "2026-W45",
                            "status": "open",
                            "starts_at": "2026-11-02T00:00:00.000Z",
                            "ends_at": "2026-11-09T00:00:00.000Z",
                        }
                    ],
                }
            ]
        }
    )

    board_id: str
    window: str
    periods: list[PeriodOut]


class ProfileIn(BaseModel):
    name: str | None = Field(None, min_length=1, max_length=64)
    segments: dict[str, str] | None = Field(
        None, description='the player\'s segment values, e.g. {"country": "FR"}'
    )


class ProfileOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"player_id": "48213377", "name": "kai_runs", "segments": {"country": "FR"}},
                {
                    "player_id": "48213377",
                    "name": "kai_runs",
                    "segments": {"country": "FR"},
                    "banned": False,
                },
            ]
        }
    )

    player_id: str
    name: str | None
    segments: dict[str, str]
    banned: bool | None = Field(
        None, description="whether the player is banned; only in an admin key's answer"
    )


class BanInfo(BaseModel):
    player_id: str
    banned_at: str


class BansOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "bans": [{"player_id": "48213377", "banned_at": "2026-11-03T18:22:07.123Z"}],
                    "next": "17",
                }
            ]
        }
    )

    bans: list[BanInfo]
    next: str | None = Field(
        description="pass as `after` for the next page (null: this is the last page)"
    )


class SegmentValue(BaseModel):
    value: str
    total: int = Field(description="public entries with this value in the period")


class SegmentValues(BaseModel):
    dimension: str
    values: list[SegmentValue]


class SegmentsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    **HEAD_EXAMPLE,
                    "segments": [
                        {
                            "dimension": "country",
                            "values": [
                                {"value": "FR", "total": 1204},
                                {"value": "DE", "total": 877},
                            ],
                        }
                    ],
                }
            ]
        }
    )

    board_id: str
    window: str
    period: str
    segments: list[SegmentValues]


class BoardDeletedOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"board_id": "arena", "deleted": True}]}
    )

    board_id: str
    deleted: Literal[True]


class PlayerErasedOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"player_id": "48213377", "erased": True}]}
    )

    player_id: str
    erased: Literal[True]


class BanOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"player_id": "48213377", "banned": True}]}
    )

    player_id: str
    banned: bool


class HoldOut(BaseModel):
    run_id: str
    player_id: str
    score: int
    window: str
    period: str
    ended_at: str


class HoldsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "board_id": "arena",
                    "holds": [
                        {
                            "run_id": "r-7f3a91",
                            "player_id": "48213377",
                            "score": 1284500,
                            "window": "weekly",
                            "period": "2026-W45",
                            "ended_at": "2026-11-03T18:22:07.123Z",
                        }
                    ],
                }
            ]
        }
    )

    board_id: str
    holds: list[HoldOut]


class HoldDecisionOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"board_id": "arena", "run_id": "r-7f3a91", "decision": "approved"}]
        }
    )

    board_id: str
    run_id: str
    decision: Literal["approved", "rejected"]


class HealthOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"status": "ok"}]})

    status: Literal["ok"]


class ConsumerLag(BaseModel):
    pending: int = Field(description="log messages not yet delivered to the consumer")
    ack_pending: int = Field(description="delivered, not yet acknowledged")
    oldest_unacked_seconds: float
    parked: int = Field(description="messages parked in PostgreSQL; see rankd replay --parked")
    parked_since: str | None


class ReadyOut(BaseModel):
    """200: ready or degraded (with reasons); 503: unavailable, naming what is down."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "status": "ready",
                    "checks": {"redis": "ok", "postgres": "ok", "nats": "ok"},
                    "consumer": {
                        "pending": 0,
                        "ack_pending": 0,
                        "oldest_unacked_seconds": 0.0,
                        "parked": 0,
                        "parked_since": None,
                    },
                }
            ]
        }
    )

    status: Literal["ready", "degraded", "unavailable"]
    checks: dict[str, str] = Field(description='each dependency: "ok" or why it is down')
    consumer: ConsumerLag | None = Field(description="the log consumer's lag (null: none here)")
    reasons: list[str] | None = Field(None, description="why it is degraded")
    recovering: dict[str, str] | None = Field(
        None,
        description="on 503: each dependency (or `startup`) being restored and how far; "
        "reads may miss acknowledged runs until it is done",
    )
    error: ErrorBody | None = Field(None, description="on 503: code unavailable")


# Request bodies as a client would send them (ReDoc and Swagger UI show these, not a sample
# made up from the schema's bounds).
BOARD_IN_EXAMPLE: dict[str, Any] = {
    "windows": ["all-time", "weekly"],
    "order": "asc",
    "policy": "best",
    "max_score": 3_600_000,
    "hold_top": 10,
    "grace_seconds": 3600,
    "segments": ["country"],
    "score_format": "duration_ms",
    "retention_days": {"weekly": 35},
}
RUN_IN_EXAMPLE: dict[str, Any] = {
    "run_id": "r-7f3a91",
    "player_id": "48213377",
    "score": 1284500,
    "ended_at": "2026-11-03T18:22:07.123Z",
}
BATCH_IN_EXAMPLE: dict[str, Any] = {
    "runs": [
        RUN_IN_EXAMPLE,
        {"run_id": "r-7f3a92", "player_id": "90211", "score": 990000},
    ]
}
PROFILE_IN_EXAMPLE: dict[str, Any] = {"name": "kai_runs", "segments": {"country": "FR"}}


def body_schema(model: type[BaseModel], example: dict[str, Any]) -> dict[str, Any]:
    """An inline OpenAPI request body for endpoints that parse JSON themselves."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": inline(schema), "example": example}},
        }
    }
