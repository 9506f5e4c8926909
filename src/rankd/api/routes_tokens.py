"""Player tokens (v1.3): a game server mints one for a player; the game client then reads
its own view and, where a board allows it, submits its own runs (rankd/tokens.py)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from rankd import results
from rankd.api import schemas
from rankd.api.http import read_json, reply, runtime
from rankd.errors import InvalidRequest, NotEnabled
from rankd.formats import check_player_id, format_time
from rankd.tokens import MAX_TTL_S, MIN_TTL_S, SCOPES

router = APIRouter(tags=["players"])
TOKEN_FIELDS = frozenset({"ttl_s", "scope"})
DEFAULT_TTL_S = 3600
DEFAULT_SCOPE = ["read"]


def parse_token_request(body: Any) -> tuple[int, list[str]]:
    """The ttl and scopes a mint asks for (defaults: an hour, read only)."""
    if not isinstance(body, dict) or set(body) - TOKEN_FIELDS:
        raise InvalidRequest('the body must be {"ttl_s": 3600, "scope": ["read", "submit"]}')
    ttl = body.get("ttl_s", DEFAULT_TTL_S)
    if not isinstance(ttl, int) or isinstance(ttl, bool) or not MIN_TTL_S <= ttl <= MAX_TTL_S:
        raise InvalidRequest(f"ttl_s must be an integer in {MIN_TTL_S}..{MAX_TTL_S} (7 days)")
    scope = body.get("scope", DEFAULT_SCOPE)
    if (
        not isinstance(scope, list)
        or not scope
        or any(s not in SCOPES for s in scope)
        or len(set(scope)) != len(scope)
    ):
        raise InvalidRequest(f"scope must be a non-empty list of distinct values from {SCOPES}")
    return ttl, [s for s in SCOPES if s in scope]


@router.post(
    "/v1/players/{player_id}/tokens",
    response_model=results.PlayerTokenIssued,
    openapi_extra=schemas.body_schema(results.TokenRequest, schemas.TOKEN_IN_EXAMPLE),
    summary="Mint a player token for a game client (server)",
    description="An HS256 JWT (claims `sub`, `scope`, `iat`, `exp`) signed with the first "
    "secret of RANKD_PLAYER_TOKEN_SECRET; a game server may mint the same itself. 501 "
    "`not_enabled` when no secret is configured.",
)
async def mint_token(player_id: str, request: Request) -> Response:
    rt = runtime(request)
    rt.auth.require(request, "server")
    check_player_id(player_id)
    body = await read_json(request) if await request.body() else {}
    ttl, scopes = parse_token_request(body)
    if rt.auth.tokens is None:
        raise NotEnabled("player tokens are off: set RANKD_PLAYER_TOKEN_SECRET to turn them on")
    token, expires_s = rt.auth.tokens.mint(player_id, scopes, ttl)
    answer: results.PlayerTokenIssued = {
        "token": token,
        "expires_at": format_time(expires_s * 1000),
        "scope": scopes,
    }
    return reply(answer)
