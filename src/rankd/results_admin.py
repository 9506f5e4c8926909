"""The wire contract's answers of the admin and operations routes: bans, review holds,
deletions and corrections, health and readiness (rankd/results.py has the rest, and what
``Doc`` and the limits are)."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from rankd.results import MAX_BAN_REASON, Doc, ErrorBody


class Ban(TypedDict):
    player_id: str
    banned: bool


class BanInfo(TypedDict):
    player_id: str
    banned_at: str
    reason: Annotated[str | None, Doc(description="the ban's reason, if one was given")]


class BanRequest(TypedDict):
    """The optional body of a ban."""

    reason: NotRequired[
        Annotated[
            str,
            Doc(description=f"why (1..{MAX_BAN_REASON} printable characters), for moderators"),
        ]
    ]


class Bans(TypedDict):
    bans: list[BanInfo]
    next: Annotated[
        str | None,
        Doc(description="pass as `after` for the next page (null: this is the last page)"),
    ]


class Hold(TypedDict):
    run_id: str
    player_id: str
    score: int
    window: str
    period: str
    ended_at: str


class Holds(TypedDict):
    board_id: str
    holds: list[Hold]


class Delivery(TypedDict):
    delivery_id: str  # <board>:<window>:<period>, sent as Rankd-Delivery
    event: Literal["period_closed"]
    url: str
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    created_at: str
    # pending: when the next attempt is due
    next_attempt_at: str | None
    last_status: int | None  # the receiver's last HTTP status (null: no answer)
    last_error: str | None
    done_at: str | None  # delivered or given up


class Deliveries(TypedDict):
    board_id: str
    deliveries: list[Delivery]


class HoldDecision(TypedDict):
    board_id: str
    run_id: str
    decision: Literal["approved", "rejected"]


class BoardDeleted(TypedDict):
    board_id: str
    deleted: Literal[True]


class PlayerErased(TypedDict):
    player_id: str
    erased: Literal[True]


class PeriodClosed(TypedDict):
    board_id: str
    window: str
    period: str
    status: Literal["closed"]
    closed_at: Annotated[str, Doc(description="from when runs into it answer closed")]


class EntryRemoved(TypedDict):
    board_id: str
    player_id: str
    window: str
    period: str
    removed: Literal[True]


class Health(TypedDict):
    status: Literal["ok"]


class ConsumerLag(TypedDict):
    pending: Annotated[int, Doc(description="log messages not yet delivered to the consumer")]
    ack_pending: Annotated[int, Doc(description="delivered, not yet acknowledged")]
    oldest_unacked_seconds: float
    parked: Annotated[
        int, Doc(description="messages parked in PostgreSQL; see rankd replay --parked")
    ]
    parked_since: str | None


class Ready(TypedDict):
    """200: ready or degraded (with reasons); 503: unavailable, naming what is down."""

    status: Literal["ready", "degraded", "unavailable"]
    checks: Annotated[dict[str, str], Doc(description='each dependency: "ok" or why it is down')]
    consumer: Annotated[
        ConsumerLag | None, Doc(description="the log consumer's lag (null: none here)")
    ]
    reasons: NotRequired[Annotated[list[str], Doc(description="why it is degraded")]]
    recovering: NotRequired[
        Annotated[
            dict[str, str],
            Doc(
                description="on 503: each dependency (or `startup`) being restored and how "
                "far; reads may miss acknowledged runs until it is done"
            ),
        ]
    ]
    error: NotRequired[Annotated[ErrorBody, Doc(description="on 503: code unavailable")]]
