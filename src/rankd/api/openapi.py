"""The OpenAPI document: who may call each route and which errors it can really send.

FastAPI derives paths, parameters and the 200 models from the routers. What it cannot know
is kept here, in one table (``ROUTES``): each operation's role (which decides the bearer
scheme and the 401/403 it can send) and the error codes it answers with. A route added later
adds one line; tests/integration/api/test_openapi.py fails for a route without one.
Statuses come from api/errors.py, so the document and the error mapping cannot drift apart.
FastAPI's own 422 is removed: request validation errors leave as 400 ``invalid_request``.

Each error status lists its codes (``x-error-codes``, and in its description) and carries
one ``example`` with the first of them; 429 ``rate_limited`` only where the rate limit
applies (/v1 routes: api/rate_limit.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from rankd import results
from rankd.api import schemas as shapes
from rankd.api.errors import status_of_code
from rankd.api.rate_limit import limited

Role = Literal["public", "viewer", "server", "admin"]
"""``viewer``: a public read that also takes ``viewer=<player_id>`` with a server key."""

BEARER = "bearer"
PLAYER_TOKEN = "playerToken"
ERROR_REF = "#/components/schemas/ErrorResponse"


@dataclass(frozen=True)
class Doc:
    role: Role
    errors: tuple[str, ...]  # besides 401/403 (from the role) and 429 (every /v1 route)
    created: bool = False  # also answers 201 with the 200's body
    player: bool = False  # also takes a player token (v1.3)


BODY = ("invalid_request", "body_too_large", "unsupported_media_type")
# unauthorized: a read made with an Authorization header that holds no valid key or token
READ = ("invalid_request", "board_not_found", "unauthorized", "unavailable")

ROUTES: dict[str, Doc] = {
    "PUT /v1/boards/{board_id}": Doc(
        "admin", (*BODY, "board_immutable_field", "unavailable"), created=True
    ),
    "GET /v1/boards": Doc("public", ("invalid_request", "unavailable")),  # active=
    "GET /v1/boards/{board_id}": Doc("public", ("board_not_found", "unavailable")),
    "POST /v1/boards/{board_id}/runs": Doc(
        "server",
        (*BODY, "score_out_of_range", "board_not_found", "run_conflict", "unavailable"),
        player=True,
    ),
    "POST /v1/boards/{board_id}/players/{player_id}/join": Doc(
        "server",
        ("invalid_request", "board_not_found", "board_full", "not_open", "unavailable"),
        player=True,
    ),
    "POST /v1/boards/{board_id}/runs:batch": Doc(
        "server", (*BODY, "board_not_found", "unavailable")
    ),
    "GET /v1/boards/{board_id}/top": Doc("viewer", READ, player=True),
    "GET /v1/boards/{board_id}/players/{player_id}": Doc(
        "viewer", (*READ, "player_not_ranked"), player=True
    ),
    "GET /v1/boards/{board_id}/players/{player_id}/around": Doc(
        "viewer", (*READ, "player_not_ranked"), player=True
    ),
    "GET /v1/boards/{board_id}/players/{player_id}/friends": Doc("viewer", READ, player=True),
    "GET /v1/boards/{board_id}/players/{player_id}/league": Doc(
        "viewer", (*READ, "player_not_ranked"), player=True
    ),
    "GET /v1/boards/{board_id}/cohorts/{cohort}": Doc("viewer", READ, player=True),
    "GET /v1/players/{player_id}/leagues": Doc(
        "public", ("invalid_request", "board_not_found", "unauthorized", "unavailable")
    ),
    "GET /v1/boards/{board_id}/rank-of": Doc("public", (*READ, "score_out_of_range")),
    "GET /v1/boards/{board_id}/periods": Doc("public", READ),
    "GET /v1/boards/{board_id}/events": Doc("public", READ),
    "GET /v1/players/{player_id}/events": Doc("server", READ, player=True),
    "PUT /v1/players/{player_id}": Doc("server", (*BODY, "unavailable")),
    "GET /v1/players/{player_id}/standings": Doc(
        "viewer", ("invalid_request", "unavailable"), player=True
    ),
    "POST /v1/players/{player_id}/tokens": Doc("server", (*BODY, "not_enabled")),
    "GET /v1/players/{player_id}": Doc("server", ("invalid_request", "unavailable")),
    "POST /v1/players/{player_id}/ban": Doc("admin", ("invalid_request", "unavailable")),
    "DELETE /v1/players/{player_id}/ban": Doc("admin", ("invalid_request", "unavailable")),
    "GET /v1/boards/{board_id}/holds": Doc("admin", READ),
    "GET /v1/boards/{board_id}/deliveries": Doc("admin", READ),
    "POST /v1/boards/{board_id}/holds/{run_id}/approve": Doc("admin", (*READ, "hold_not_found")),
    "POST /v1/boards/{board_id}/holds/{run_id}/reject": Doc("admin", (*READ, "hold_not_found")),
    "GET /v1/bans": Doc("admin", ("invalid_request", "unavailable")),
    "GET /v1/boards/{board_id}/segments": Doc("public", READ),
    "DELETE /v1/boards/{board_id}": Doc("admin", ("board_not_found", "unavailable")),
    "POST /v1/boards/{board_id}/periods/{period}/close": Doc(
        "admin", ("invalid_request", "board_not_found")
    ),
    "DELETE /v1/boards/{board_id}/entries/{player_id}": Doc(
        "admin", ("invalid_request", "board_not_found", "player_not_ranked", "unavailable")
    ),
    "DELETE /v1/players/{player_id}": Doc("admin", ("invalid_request", "unavailable")),
    "GET /healthz": Doc("public", ()),
    "GET /readyz": Doc("public", ("unavailable",)),
    "GET /metrics": Doc("public", ()),
}
# An operation missing from ROUTES is documented with this (and fails
# tests/integration/api/test_openapi.py).
FALLBACK = Doc("public", ("invalid_request", "unavailable"))

ROLE_ERRORS: dict[Role, tuple[str, ...]] = {
    "public": (),
    # only with viewer= (that needs a server key) or a player token (which may lack a scope)
    "viewer": ("unauthorized", "forbidden"),
    "server": ("unauthorized", "forbidden"),  # forbidden: a player token where a key is needed
    "admin": ("unauthorized", "forbidden"),
}
ROLE_NOTES: dict[Role, str] = {
    "public": "",
    "viewer": "Public; `viewer=<player_id>` (a player's own view) needs a server key.",
    "server": "Needs a server key (or an admin key): `Authorization: Bearer <key>`.",
    "admin": "Needs an admin key: `Authorization: Bearer <key>`.",
}
PLAYER_NOTES: dict[Role, str] = {
    "viewer": "A player token (scope `read`) reads as that player's own view.",
    "server": "A player token may do this for its own player only (on submits: scope "
    "`submit`, a board with `client_submits`).",
}

# An example sentence per code (the real ones name the value at fault).
MESSAGES: dict[str, str] = {
    "invalid_request": "score must be a non-negative integer",
    "score_out_of_range": "score is above this board's max_run_score of 1000000000",
    "unauthorized": "this endpoint needs a server key: Authorization: Bearer <key>",
    "forbidden": "this endpoint needs an admin key; a server key is not enough",
    "board_not_found": "board 'arena' does not exist",
    "player_not_ranked": "player '48213377' has no entry in weekly period 2026-W45",
    "hold_not_found": "no run 'r-7f3a91' is held on board 'arena'",
    "board_immutable_field": "order cannot change on a board that has runs; create a new board",
    "board_full": "occurrence 20261205T1800Z has its 100 entrants",
    "not_open": "no occurrence is open now; name an upcoming one with period=",
    "run_conflict": "run_id 'r-7f3a91' was already sent on this board with another player_id,"
    " score or ended_at; send a new run_id for a new run",
    "body_too_large": "the request body is larger than 1 MiB; send fewer runs per request",
    "unsupported_media_type": "send the body as JSON with Content-Type: application/json",
    "rate_limited": "too many requests for this key; retry after the Retry-After seconds",
    "unavailable": "the run log did not answer in time; nothing was accepted, retry",
    "not_enabled": "player tokens are off: set RANKD_PLAYER_TOKEN_SECRET to turn them on",
}
# Examples of a route's own non-2xx models (their model's example is a 200's).
OWN_EXAMPLES: dict[str, dict[str, Any]] = {
    "GET /readyz": {
        "503": {
            "status": "unavailable",
            "checks": {
                "redis": "ok",
                "postgres": "down: OperationalError: connection refused",
                "nats": "ok",
            },
            "consumer": None,
            "error": {"code": "unavailable", "message": "not ready: postgres down"},
        }
    }
}
RETRY_AFTER = {
    "description": "seconds to wait before retrying",
    "schema": {"type": "integer", "minimum": 1},
}


def doc_of(method: str, path: str) -> Doc:
    return ROUTES.get(f"{method.upper()} {path}", FALLBACK)


def error_codes(method: str, path: str) -> dict[int, list[str]]:
    """The error codes an operation can send, by status."""
    doc = doc_of(method, path)
    codes = (*ROLE_ERRORS[doc.role], *doc.errors, *(("rate_limited",) if limited(path) else ()))
    by_status: dict[int, list[str]] = {}
    for code in dict.fromkeys(codes):
        by_status.setdefault(status_of_code(code), []).append(code)
    return by_status


def _error_responses(method: str, path: str) -> dict[int, dict[str, Any]]:
    responses: dict[int, dict[str, Any]] = {}
    for status, group in sorted(error_codes(method, path).items()):
        example = {"error": {"code": group[0], "message": MESSAGES[group[0]]}}
        response: dict[str, Any] = {
            "description": "error code " + " or ".join(f"`{c}`" for c in group),
            "content": {"application/json": {"schema": {"$ref": ERROR_REF}, "example": example}},
            "x-error-codes": group,
        }
        if status == 429:
            response["headers"] = {"Retry-After": RETRY_AFTER}
        responses[status] = response
    return responses


def _with_example(response: dict[str, Any], schemas: dict[str, Any]) -> None:
    """Show the referenced model's own example beside the schema (Swagger UI displays it)."""
    for media in response.get("content", {}).values():
        ref = media.get("schema", {}).get("$ref", "")
        examples = schemas.get(ref.rpartition("/")[2], {}).get("examples")
        if examples and "example" not in media and "examples" not in media:
            media["example"] = examples[0]


def _document_operation(
    method: str, path: str, op: dict[str, Any], schemas: dict[str, Any]
) -> None:
    doc = doc_of(method, path)
    responses: dict[str, Any] = op["responses"]
    responses.pop("422", None)
    if doc.created and "200" in responses:
        responses["200"]["description"] = "Updated"
        responses["201"] = {**responses["200"], "description": "Created"}
    for status, response in _error_responses(method, path).items():
        responses.setdefault(str(status), response)  # a route's own (e.g. /readyz's 503) wins
    for own_status, example in OWN_EXAMPLES.get(f"{method.upper()} {path}", {}).items():
        responses[own_status]["content"]["application/json"]["example"] = example
    for response in responses.values():
        _with_example(response, schemas)
    tokens: list[dict[str, list[str]]] = [{PLAYER_TOKEN: []}] if doc.player else []
    if doc.role in ("server", "admin"):
        op["security"] = [{BEARER: []}, *tokens]
    elif doc.role == "viewer":
        op["security"] = [{}, {BEARER: []}, *tokens]  # optional: only for viewer=
    note = ROLE_NOTES[doc.role] + (" " + PLAYER_NOTES[doc.role] if doc.player else "")
    if note:
        op["description"] = f"{note}\n\n{op.get('description', '')}".strip()


def _add_components(schemas: dict[str, Any]) -> None:
    """The error body (no route names it as its model), each shape's own examples (FastAPI
    drops every null from the document, nulls inside examples too), and null for the keys
    that may be left out (rankd.results)."""
    error = shapes.shape_schema(results.ErrorResponse, ref_template="#/components/schemas/{model}")
    schemas.update(error.pop("$defs", {}))
    schemas[results.ErrorResponse.__name__] = error
    for schema in schemas.values():
        shapes.nullable_optionals(schema)
    for shape, examples in shapes.EXAMPLES.items():
        if shape.__name__ in schemas:
            schemas[shape.__name__]["examples"] = examples


def build(app: FastAPI) -> dict[str, Any]:
    """The document, built once per app."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    components = document.setdefault("components", {})
    schemas: dict[str, Any] = components.setdefault("schemas", {})
    _add_components(schemas)
    components["securitySchemes"] = {
        BEARER: {
            "type": "http",
            "scheme": "bearer",
            "description": "an admin or server key (RANKD_ADMIN_KEYS, RANKD_SERVER_KEYS)",
        },
        PLAYER_TOKEN: {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "a player token (HS256 JWT: sub, scope, exp) from POST "
            "/v1/players/{player_id}/tokens or minted by the game server with "
            "RANKD_PLAYER_TOKEN_SECRET; held by a game client",
        },
    }
    for path, operations in document.get("paths", {}).items():
        for method, op in operations.items():
            _document_operation(method, path, op, schemas)
    for unused in ("HTTPValidationError", "ValidationError"):  # only the 422 used them
        schemas.pop(unused, None)
    app.openapi_schema = document
    return document


def install(app: FastAPI) -> None:
    app.openapi = lambda: build(app)  # type: ignore[method-assign]
