"""Pydantic models of the HTTP shapes, for /openapi.json and /docs.

Hot paths parse and render JSON themselves (orjson, rankd.validation) so these models
document the contract without costing a validation pass per request. The services' own
outputs are typed in rankd/results.py; tests/test_results.py keeps the two in step.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from rankd.formats import PLAYER_ID_PATTERN, RUN_ID_PATTERN

ScoreFormat = Literal["integer", "duration_ms", "decimal_1", "decimal_2", "decimal_3"]


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody


class BoardIn(BaseModel):
    windows: list[Literal["all-time", "daily", "weekly", "monthly"]] | None = None
    order: Literal["desc", "asc"] | None = None
    policy: Literal["best", "sum"] | None = None
    max_score: int | None = Field(None, ge=1, le=2**53 - 1)
    max_run_score: int | None = Field(None, ge=1, le=2**53 - 1)
    shards: int | None = Field(None, ge=1, le=1024, description="only 1 until sharding is built")
    hold_top: int | None = Field(None, ge=0, description="only 0 until review holds are built")
    grace_seconds: int | None = Field(None, ge=0, le=31_536_000)
    retention_days: dict[str, int] | None = None
    segments: list[str] | None = Field(None, max_length=4)
    score_format: ScoreFormat | None = Field(
        None, description="how pages display a score (display only); `duration_ms`: 1:05.364"
    )


class BoardOut(BaseModel):
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
    results: list[BatchResult]


class Entry(BaseModel):
    rank: int
    player_id: str
    score: int
    achieved_at: str
    name: str | None


class TopOut(BaseModel):
    board_id: str
    window: str
    period: str
    total: int
    entries: list[Entry]


class PlayerOut(Entry):
    board_id: str
    window: str
    period: str
    total: int
    percentile: float


class AroundOut(BaseModel):
    board_id: str
    window: str
    period: str
    total: int
    entries: list[Entry]


class FriendEntry(Entry):
    position: int


class FriendsOut(BaseModel):
    board_id: str
    window: str
    period: str
    entries: list[FriendEntry]


class RankOfOut(BaseModel):
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
    board_id: str
    window: str
    periods: list[PeriodOut]


class ProfileIn(BaseModel):
    name: str | None = Field(None, min_length=1, max_length=64)
    segments: dict[str, str] | None = Field(
        None, description='the player\'s segment values, e.g. {"country": "FR"}'
    )


class ProfileOut(BaseModel):
    player_id: str
    name: str | None
    segments: dict[str, str]


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
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
            "content": {"application/json": {"schema": inline(schema)}},
        }
    }


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (400, 401, 403, 404, 409, 413, 429, 503)
}
