"""The wire contract (CONTRACT.md), once: every JSON shape the HTTP API takes and answers
(results_admin.py and results_leagues.py have the rest). TypedDicts: the services build
plain dicts that orjson renders as they are, mypy checks each against its shape, and the
routes name them as FastAPI response models, so /openapi.json documents exactly them
(api/schemas.py adds the examples); the Python client re-exports them. The input rules
stated (patterns, bounds) are the validators' constants. A key that may be left out
(``NotRequired``, any key of a ``total=False`` body) is documented as also taking null
(api/schemas.py ``nullable_optionals``): answers leave it out, bodies may send null (a
board's settings must leave it out). Only ``Ready`` has a docstring: class docstrings
become schema descriptions.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from rankd.codec import MAX_SCORE_LIMIT
from rankd.formats import PLAYER_ID_PATTERN, RUN_ID_PATTERN
from rankd.leagues import LeagueSettings
from rankd.periods import Window
from rankd.wire_doc import MAX_BAN_REASON as MAX_BAN_REASON
from rankd.wire_doc import MAX_BATCH as MAX_BATCH
from rankd.wire_doc import MAX_GRACE_S as MAX_GRACE_S
from rankd.wire_doc import MAX_HOLD_TOP as MAX_HOLD_TOP
from rankd.wire_doc import MAX_NAME as MAX_NAME
from rankd.wire_doc import MAX_SEGMENT_DIMENSIONS as MAX_SEGMENT_DIMENSIONS
from rankd.wire_doc import MAX_SHARDS as MAX_SHARDS
from rankd.wire_doc import SCORE_FORMATS as SCORE_FORMATS
from rankd.wire_doc import Doc as Doc
from rankd.wire_doc import ScoreFormat as ScoreFormat

# --- request bodies ------------------------------------------------------------------------


class BoardSettings(TypedDict, total=False):
    # PUT /v1/boards/{board_id}: omitted fields keep their value (boards.apply_changes)
    windows: list[Window]
    order: Literal["desc", "asc"]
    policy: Literal["best", "sum", "latest"]
    window_policies: Annotated[
        dict[str, Literal["best", "sum", "latest"]],
        Doc(
            description="a policy per window overriding `policy`, e.g. "
            '`{"all-time": "best", "weekly": "sum"}`; fixed once the board has runs'
        ),
    ]
    max_score: Annotated[int, Doc(minimum=1, maximum=MAX_SCORE_LIMIT)]
    max_run_score: Annotated[int, Doc(minimum=1, maximum=MAX_SCORE_LIMIT)]
    shards: Annotated[
        int,
        Doc(
            minimum=1,
            maximum=MAX_SHARDS,
            description="sorted sets each period is split over (1: unsharded); a change on a"
            " board with runs reshards it while it serves (`resharding` shows how far)",
        ),
    ]
    hold_top: Annotated[
        int,
        Doc(
            minimum=0,
            maximum=MAX_HOLD_TOP,
            description="a run that would enter the top hold_top is held for review (0: off)",
        ),
    ]
    grace_seconds: Annotated[int, Doc(minimum=0, maximum=MAX_GRACE_S)]
    retention_days: dict[str, int]
    segments: Annotated[list[str], Doc(maxItems=MAX_SEGMENT_DIMENSIONS)]
    score_format: Annotated[
        ScoreFormat,
        Doc(description="how pages display a score (display only); `duration_ms`: 1:05.364"),
    ]
    client_submits: Annotated[
        bool,
        Doc(description="game clients may submit their own runs with a player token"),
    ]
    schedule: Annotated[
        dict[str, str | None] | None,
        Doc(
            description="the scheduled window's occurrences: starts_at (RFC 3339, a minute),"
            " every (ISO 8601, PT1H..P1Y; absent: one), duration (default: every), ends_at"
        ),
    ]
    join_required: Annotated[
        bool, Doc(description="the scheduled window counts only players who joined")
    ]
    max_entrants: Annotated[
        int,
        Doc(minimum=0, description="most players per occurrence (joins or first runs); 0: any"),
    ]
    max_attempts: Annotated[
        int, Doc(minimum=0, description="most distinct runs a player's occurrence counts; 0: any")
    ]
    hooks: Annotated[
        dict[Literal["period_closed"], str | None],
        Doc(
            description="webhooks: `period_closed`, an http(s) URL POSTed each period's total"
            " and top 100 once it is frozen (null: none); needs RANKD_WEBHOOK_SECRET"
        ),
    ]
    league: Annotated[
        LeagueSettings | None,
        Doc(description="league seasons over the one periodic window; fixed once it has runs"),
    ]


class Run(TypedDict):
    # one run to submit (validation.parse_run)
    run_id: Annotated[str, Doc(pattern=RUN_ID_PATTERN)]
    player_id: Annotated[str, Doc(pattern=PLAYER_ID_PATTERN)]
    score: Annotated[int, Doc(minimum=0)]
    ended_at: NotRequired[
        Annotated[str, Doc(description="RFC 3339; default: when the run is received")]
    ]
    segments: NotRequired[
        Annotated[
            dict[str, str],
            Doc(description="segment values; dimensions left out come from the player's profile"),
        ]
    ]
    metadata: NotRequired[
        Annotated[
            dict[str, Any],
            Doc(
                description="kept with the entry the run holds (at most 16 keys, 1,024 bytes"
                " encoded); reads return it with include=metadata"
            ),
        ]
    ]


TokenScope = Literal["read", "submit", "join"]


class TokenRequest(TypedDict, total=False):
    # POST /v1/players/{player_id}/tokens
    ttl_s: Annotated[int, Doc(minimum=60, maximum=604_800, description="default 3600")]
    scope: Annotated[
        list[TokenScope],
        Doc(description='what the token may do (default ["read"])'),
    ]


class Batch(TypedDict):
    runs: Annotated[list[Run], Doc(maxItems=MAX_BATCH)]


class ProfileUpdate(TypedDict, total=False):
    name: Annotated[str, Doc(minLength=1, maxLength=MAX_NAME)]
    segments: Annotated[
        dict[str, str], Doc(description='the player\'s segment values, e.g. {"country": "FR"}')
    ]


# --- answers -------------------------------------------------------------------------------


class ErrorBody(TypedDict):
    code: str
    message: str


class ErrorResponse(TypedDict):
    # every non-2xx answer but /readyz's 503 (api/errors.py)
    error: ErrorBody


class Joined(TypedDict):
    player_id: str
    period: str
    joined: bool


class Occurrence(TypedDict):
    period: str
    starts_at: str
    ends_at: str


class Board(TypedDict):
    board_id: str
    windows: list[str]
    order: str
    policy: str
    window_policies: dict[str, str]
    max_score: int
    max_run_score: int
    shards: int
    hold_top: int
    grace_seconds: int
    retention_days: dict[str, int]
    segments: list[str]
    score_format: ScoreFormat
    client_submits: bool
    join_required: bool
    max_entrants: int
    max_attempts: int
    league: LeagueSettings | None
    # shown to admins only: a receiver's URL is the game's business
    hooks: NotRequired[dict[str, str]]
    # a board with a schedule: its occurrence open now, and the next one (null: none)
    schedule: NotRequired[dict[str, str | None] | None]
    current_period: NotRequired[Occurrence | None]
    next_period: NotRequired[Occurrence | None]
    resharding: NotRequired[dict[str, int]]  # while new shards are moved in: done, total
    created_at: str
    tie_resolution_ms: dict[str, int]


class Boards(TypedDict):
    boards: list[Board]


class Standing(TypedDict):
    window: str
    period: str
    segment: Annotated[
        str | None, Doc(description='null for the global standings, else "<dimension>:<value>"')
    ]
    # the scheduled window: not_open (the run ended outside every occurrence), not_joined,
    # full, attempts_exhausted (its occurrence does not count it)
    status: Literal[
        "ranked", "held", "closed", "not_open", "not_joined", "full", "attempts_exhausted"
    ]
    rank: NotRequired[int]
    previous_rank: NotRequired[
        Annotated[
            int | None,
            Doc(
                description="the rank before this run, in the player's own view, read in the "
                "same atomic step; null when the player had no entry"
            ),
        ]
    ]
    score: NotRequired[int]
    achieved_at: NotRequired[str]
    improved: bool
    is_best: bool


class SubmitResult(TypedDict):
    run_id: str
    player_id: str
    score: int
    standings: list[Standing]


class BatchItem(TypedDict):
    # one run's result in a batch: standings, or error for a run refused alone
    run_id: str | None
    standings: NotRequired[list[Standing]]
    error: NotRequired[ErrorBody]


class BatchResults(TypedDict):
    results: list[BatchItem]


class Entry(TypedDict):
    rank: int
    player_id: str
    score: int
    achieved_at: str
    name: str | None
    # with include=metadata: the metadata of the run holding the entry (null: none)
    metadata: NotRequired[dict[str, Any] | None]


class FriendEntry(Entry):
    position: int


class Head(TypedDict):
    # which standings a read answers about
    board_id: str
    window: str
    period: str


class Page(Head):
    # a slice of a period's standings: the top list, or the entries around a player
    total: int
    entries: list[Entry]


class TopPage(Page):
    # GET .../top
    next_cursor: Annotated[
        str | None,
        Doc(
            description="send as cursor= for the page after this one (null: the last page); "
            "opaque, bound to this board, window, period and segment"
        ),
    ]


Top = Page
Around = Page


class PlayerStanding(Entry, Head):
    # an exact read of one player's standing
    total: int
    percentile: float


class BoardStanding(TypedDict):
    board_id: str
    window: str
    period: str
    rank: int
    score: int
    achieved_at: str
    total: int


class PlayerStandings(TypedDict):
    # GET /v1/players/{player_id}/standings
    player_id: str
    standings: list[BoardStanding]
    unknown_boards: Annotated[list[str], Doc(description="asked board ids that do not exist")]


class PlayerRank(PlayerStanding):
    # GET .../players/{player_id}: with accuracy=approx it says whether rank (and total) are
    # estimates, and by how many ranks at most the exact rank differs (0 when exact)
    approximate: NotRequired[
        Annotated[
            bool, Doc(description="with accuracy=approx: whether rank and total are estimates")
        ]
    ]
    error_bound: NotRequired[
        Annotated[
            int, Doc(description="with accuracy=approx: the exact rank is within rank ± this")
        ]
    ]


ApproxStanding = PlayerRank


class Friends(Head):
    entries: list[FriendEntry]
    not_found: Annotated[
        list[str], Doc(description="the asked ids (the player's too) that have no entry here")
    ]


class RankOf(Head):
    score: int
    rank: int
    total: int


class PeriodInfo(TypedDict):
    period: str
    # upcoming: a scheduled board's next occurrence
    status: Literal["open", "closed", "archived", "upcoming"]
    starts_at: str
    ends_at: str


class Periods(TypedDict):
    board_id: str
    window: str
    periods: list[PeriodInfo]


class PlayerTokenIssued(TypedDict):
    token: Annotated[str, Doc(description="send as Authorization: Bearer <token>")]
    expires_at: str
    scope: list[str]


class Profile(TypedDict):
    player_id: str
    name: str | None
    segments: dict[str, str]
    banned: NotRequired[
        Annotated[
            bool,
            Doc(description="whether the player is banned; only in an admin key's answer"),
        ]
    ]


class SegmentValue(TypedDict):
    value: str
    total: Annotated[int, Doc(description="public entries with this value in the period")]


class SegmentValues(TypedDict):
    dimension: str
    values: list[SegmentValue]


class Segments(Head):
    segments: list[SegmentValues]
