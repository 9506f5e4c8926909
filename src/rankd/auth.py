"""Bearer-key roles: admin, server, public. Keys are compared in constant time. Built by
the runtime (one per process) and asked by the routes and the rate limiter."""

from __future__ import annotations

import hmac
from typing import Literal

from starlette.requests import Request

from rankd.errors import Forbidden, Unauthorized

Role = Literal["admin", "server", "public"]


def _matches(candidate: bytes, keys: list[bytes]) -> bool:
    # Compare against every key without stopping early, so timing says nothing.
    found = False
    for key in keys:
        found |= hmac.compare_digest(candidate, key)
    return found


class Authenticator:
    def __init__(self, admin_keys: list[str], server_keys: list[str]) -> None:
        self.admin = [k.encode() for k in admin_keys]
        self.server = [k.encode() for k in server_keys]

    def role(self, request: Request) -> Role:
        header = request.headers.get("authorization")
        if header is None:
            return "public"
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("the Authorization header must be 'Bearer <key>'")
        candidate = token.strip().encode()
        if _matches(candidate, self.admin):
            return "admin"
        if _matches(candidate, self.server):
            return "server"
        raise Unauthorized("the key is not valid; check RANKD_ADMIN_KEYS / RANKD_SERVER_KEYS")

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
        if needed == "admin" and role != "admin":
            raise Forbidden("this endpoint needs an admin key; a server key is not enough")
        return role
