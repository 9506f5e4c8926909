"""The examples /docs shows beside the contract's shapes (rankd.results), and the request
bodies of the routes that parse JSON themselves.

Hot paths parse and render JSON themselves (orjson, rankd.validation), so the shapes document
the contract without costing a validation pass per request. Each answer's shape carries an
example (``examples`` in its schema, added by api/openapi.py);
tests/integration/api/test_openapi.py checks every example and real responses of every route
against the document.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from rankd import results, results_admin, results_leagues

BOARD_EXAMPLE: dict[str, Any] = {
    "board_id": "arena",
    "windows": ["all-time", "weekly"],
    "order": "desc",
    "policy": "best",
    "window_policies": {"weekly": "sum"},
    "max_score": 1_000_000_000,
    "max_run_score": 1_000_000_000,
    "shards": 1,
    "hold_top": 0,
    "grace_seconds": 3600,
    "retention_days": {"daily": 8, "weekly": 35, "monthly": 100},
    "segments": ["country"],
    "score_format": "integer",
    "client_submits": False,
    "join_required": False,
    "max_entrants": 0,
    "max_attempts": 0,
    "league": None,
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
            "previous_rank": 1042,
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
            "previous_rank": 100,
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


# Each answer's examples, by shape: its schema's ``examples`` in the document.
EXAMPLES: dict[type, list[dict[str, Any]]] = {
    results.ErrorResponse: [
        {"error": {"code": "board_not_found", "message": "board 'arena' does not exist"}}
    ],
    results.Board: [BOARD_EXAMPLE],
    results.Boards: [{"boards": [BOARD_EXAMPLE]}],
    results.SubmitResult: [SUBMIT_EXAMPLE],
    results.Joined: [{"player_id": "48213377", "period": "20261205T1800Z", "joined": True}],
    results.BatchResults: [
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
    ],
    results.Page: [{**HEAD_EXAMPLE, "total": 1042311, "entries": [ENTRY_EXAMPLE]}],
    results.PlayerRank: [{**HEAD_EXAMPLE, **ENTRY_EXAMPLE, "total": 1042311, "percentile": 99.99}],
    results.Friends: [
        {**HEAD_EXAMPLE, "entries": [{**ENTRY_EXAMPLE, "position": 1}], "not_found": ["90210"]}
    ],
    results.PlayerStandings: [
        {
            "player_id": "48213377",
            "standings": [
                {
                    **HEAD_EXAMPLE,
                    "rank": 88416,
                    "score": 1284500,
                    "achieved_at": "2026-11-03T18:22:07.123Z",
                    "total": 1042311,
                }
            ],
            "unknown_boards": [],
        }
    ],
    results.PlayerTokenIssued: [
        {
            "token": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0ODIxMzM3NyIsInNjb3BlIjoi"
            "cmVhZCBzdWJtaXQiLCJpYXQiOjE3OTY0OTA5MjcsImV4cCI6MTc5NjQ5NDUyN30.c2lnbmF0dXJl",
            "expires_at": "2026-11-03T19:22:07.000Z",
            "scope": ["read", "submit"],
        }
    ],
    results.TopPage: [
        {
            **HEAD_EXAMPLE,
            "total": 1042311,
            "entries": [ENTRY_EXAMPLE],
            "next_cursor": "q2xJb0FZ1mH3v0hQ8U3Jz1syImFyZW5hIiwxLCJ3ZWVrbHkiXQ",
        }
    ],
    results_leagues.Cohort: [
        {
            **HEAD_EXAMPLE,
            "tier": "silver",
            "cohort": "silver-412",
            "ends_at": "2026-11-09T00:00:00.000Z",
            "entries": [{**ENTRY_EXAMPLE, "rank": 1, "zone": "promote"}],
        }
    ],
    results_leagues.LeagueHistory: [
        {
            "board_id": "arena",
            "player_id": "48213377",
            "tier": "gold",
            "history": [
                {
                    "period": "2026-W44",
                    "tier": "silver",
                    "cohort": "silver-412",
                    "rank": 2,
                    "moved": "up",
                }
            ],
        }
    ],
    results.RankOf: [{**HEAD_EXAMPLE, "score": 1284500, "rank": 12, "total": 1042311}],
    results.Periods: [
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
    ],
    results.Profile: [
        {"player_id": "48213377", "name": "kai_runs", "segments": {"country": "FR"}},
        {
            "player_id": "48213377",
            "name": "kai_runs",
            "segments": {"country": "FR"},
            "banned": False,
        },
    ],
    results_admin.Bans: [
        {
            "bans": [
                {"player_id": "48213377", "banned_at": "2026-11-03T18:22:07.123Z", "reason": None}
            ],
            "next": "17",
        }
    ],
    results.Segments: [
        {
            **HEAD_EXAMPLE,
            "segments": [
                {
                    "dimension": "country",
                    "values": [{"value": "FR", "total": 1204}, {"value": "DE", "total": 877}],
                }
            ],
        }
    ],
    results_admin.BoardDeleted: [{"board_id": "arena", "deleted": True}],
    results_admin.PlayerErased: [{"player_id": "48213377", "erased": True}],
    results_admin.PeriodClosed: [
        {
            "board_id": "arena",
            "window": "weekly",
            "period": "2026-W45",
            "status": "closed",
            "closed_at": "2026-11-05T18:00:03.000Z",
        }
    ],
    results_admin.EntryRemoved: [
        {
            "board_id": "arena",
            "player_id": "48213377",
            "window": "weekly",
            "period": "2026-W45",
            "removed": True,
        }
    ],
    results_admin.Ban: [{"player_id": "48213377", "banned": True}],
    results_admin.Holds: [
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
    ],
    results_admin.Deliveries: [
        {
            "board_id": "arena",
            "deliveries": [
                {
                    "delivery_id": "arena:weekly:2026-W45",
                    "event": "period_closed",
                    "url": "https://game.example/rankd/hooks",
                    "status": "pending",
                    "attempts": 2,
                    "created_at": "2026-11-10T01:00:15.000Z",
                    "next_attempt_at": "2026-11-10T01:00:35.000Z",
                    "last_status": 503,
                    "last_error": "answered 503",
                    "done_at": None,
                }
            ],
        }
    ],
    results_admin.HoldDecision: [
        {"board_id": "arena", "run_id": "r-7f3a91", "decision": "approved"}
    ],
    results_admin.Health: [{"status": "ok"}],
    results_admin.Ready: [
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
    ],
}


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
    "metadata": {"car": "red-7", "replay": "rp-55e1"},
}
BATCH_IN_EXAMPLE: dict[str, Any] = {
    "runs": [
        RUN_IN_EXAMPLE,
        {"run_id": "r-7f3a92", "player_id": "90211", "score": 990000},
    ]
}
PROFILE_IN_EXAMPLE: dict[str, Any] = {"name": "kai_runs", "segments": {"country": "FR"}}
BAN_IN_EXAMPLE: dict[str, Any] = {"reason": "speed hack: 3 runs under the track record"}
TOKEN_IN_EXAMPLE: dict[str, Any] = {"ttl_s": 3600, "scope": ["read", "submit"]}


# Keys a schema property keeps beside the ``anyOf`` that makes it nullable.
_ANNOTATIONS = ("title", "description", "default")


def nullable_optionals(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each property that may be left out documented as also taking null
    (see rankd.results), in place; returns it."""
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        if name in required or _takes_null(prop):
            continue
        kept = {k: prop.pop(k) for k in _ANNOTATIONS if k in prop}
        any_of = [dict(prop), {"type": "null"}]
        prop.clear()
        prop.update(anyOf=any_of, **kept)
    for nested in schema.get("$defs", {}).values():
        nullable_optionals(nested)
    return schema


def _takes_null(prop: dict[str, Any]) -> bool:
    return prop.get("type") == "null" or any(
        branch.get("type") == "null" for branch in prop.get("anyOf", ())
    )


def shape_schema(shape: type, ref_template: str = "#/$defs/{model}") -> dict[str, Any]:
    """The JSON schema the document gives a shape of rankd.results."""
    schema: dict[str, Any] = TypeAdapter(shape).json_schema(ref_template=ref_template)
    return nullable_optionals(schema)


def body_schema(shape: type, example: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    """An inline OpenAPI request body for endpoints that parse JSON themselves."""
    schema = shape_schema(shape)
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
            "required": required,
            "content": {"application/json": {"schema": inline(schema), "example": example}},
        }
    }
