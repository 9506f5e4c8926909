"""Bearer roles: admin, server, public, and (v1.3) player tokens. Keys are compared in
constant time. Built by the runtime (one per process) and asked by the routes and the rate
limiter."""

from __future__ import annotations

import hmac
from typing import Literal

from starlette.requests import Request

from rankd.errors import Forbidden, Unauthorized
from rankd.tokens import PlayerToken, PlayerTokens, looks_like_jwt

Role = Literal["admin", "server", "public", "player"]


def _matches(candidate: bytes, keys: list[bytes]) -> bool:
    # Compare against every key without stopping early, so timing says nothing.
    found = False
    for key in keys:
        found |= hmac.compare_digest(candidate, key)
    return found


class Authenticator:
    def __init__(
        self, admin_keys: list[str], server_keys: list[str], tokens: PlayerTokens | None = None
    ) -> None:
        self.admin = [k.encode() for k in admin_keys]
        self.server = [k.encode() for k in server_keys]
        self.tokens = tokens  # None: player tokens are off (no RANKD_PLAYER_TOKEN_SECRET)

    def identify(self, request: Request) -> tuple[Role, PlayerToken | None]:
        """Who is asking: a role, and for a player token what it grants."""
        header = request.headers.get("authorization")
        if header is None:
            return "public", None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("the Authorization header must be 'Bearer <key>'")
        token = token.strip()
        candidate = token.encode()
        if _matches(candidate, self.admin):
            return "admin", None
        if _matches(candidate, self.server):
            return "server", None
        if self.tokens is not None and looks_like_jwt(token):
            return "player", self.tokens.verify(token)
        raise Unauthorized("the key is not valid; check RANKD_ADMIN_KEYS / RANKD_SERVER_KEYS")

    def role(self, request: Request) -> Role:
        return self.identify(request)[0]

    def admin_header(self, header: str | None) -> bool:
        """Whether an Authorization header carries an admin key (no error for anything
        else: for answers that only show admins more)."""
        candidate = self.valid_key(header)
        return candidate is not None and _matches(candidate, self.admin)

    def valid_key(self, header: str | None) -> bytes | None:
        """The admin or server key an Authorization header carries, or None when it carries
        none or a wrong one: no error here (the rate limiter asks before the route does)."""
        if header is None:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        candidate = token.strip().encode()
        if _matches(candidate, self.admin) or _matches(candidate, self.server):
            return candidate
        return None

    def require(self, request: Request, needed: Literal["admin", "server"]) -> Role:
        role = self.role(request)
        if role == "public":
            raise Unauthorized(f"this endpoint needs a {needed} key: Authorization: Bearer <key>")
        if role == "player":
            raise Forbidden(f"this endpoint needs a {needed} key; a player token is not enough")
        if needed == "admin" and role != "admin":
            raise Forbidden("this endpoint needs an admin key; a server key is not enough")
        return role
