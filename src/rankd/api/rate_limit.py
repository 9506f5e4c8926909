"""Rate limits on every /v1 request, as a plain ASGI middleware that runs before routing.

A request is counted against its bearer key when it carries a valid one, else against its
client address (``X-Forwarded-For`` only as far as ``RANKD_RATE_TRUSTED_PROXIES`` says
proxies append to it). Over the limit it gets 429 ``rate_limited`` with ``Retry-After`` and
never reaches a route, so it changes nothing. /healthz, /readyz, /metrics, the docs and the
live page are not limited: probes and scrapes must not be refused.
"""

from __future__ import annotations

import hashlib
import ipaddress
from functools import lru_cache
from typing import cast

from starlette.types import ASGIApp, Receive, Scope, Send

from rankd.api.errors import error_response, response_for
from rankd.errors import RateLimited
from rankd.runtime import Runtime
from rankd.services.rate_limits import address_identity, key_identity

# hashed once per valid key; only configured keys get here, so this stays small anyway
_key_identity = lru_cache(maxsize=1024)(key_identity)


def limited(path: str) -> bool:
    """Whether requests to ``path`` count against a rate limit (api/openapi.py documents
    429 for these only)."""
    return path == "/v1" or path.startswith("/v1/")


def _header(scope: Scope, name: bytes) -> str | None:
    """A header's value (several of one name joined by commas, as HTTP allows)."""
    values = [v.decode("latin-1") for k, v in scope["headers"] if k == name]
    return ",".join(values) if values else None


def _network(raw: str) -> str | None:
    """The address as counted: IPv4 whole, IPv6 by its /64 (one subscriber usually holds a
    whole /64, and could otherwise take a fresh address per request); None if not an IP."""
    try:
        address = ipaddress.ip_address(raw.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False).network_address) + "/64"
    return str(address)


def _opaque(raw: str) -> str:
    """A peer that is not an IP address (a Unix socket path, say) as a bounded identity:
    however long it is, the limiter's memory per identity stays the same."""
    return "h:" + hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()[:32]


def client_address(scope: Scope, trusted_proxies: int) -> str:
    """Who sent the request: the peer, or with ``trusted_proxies`` proxies in front the
    address the outermost of them saw (that many entries from the right of
    X-Forwarded-For). Entries further left are the client's own word, so never used."""
    client = scope.get("client")
    peer = (_network(client[0]) or _opaque(client[0])) if client else "unknown"
    if trusted_proxies == 0:
        return peer
    forwarded = _header(scope, b"x-forwarded-for")
    if forwarded is None:
        return peer
    entries = forwarded.rsplit(",", trusted_proxies)  # bounded work, however long the header
    if len(entries) < trusted_proxies:
        return peer  # fewer hops than configured: not through the proxies we trust
    return _network(entries[-trusted_proxies]) or peer


class RateLimit:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not limited(scope["path"]):
            await self.app(scope, receive, send)
            return
        rt = cast(Runtime, scope["app"].state.runtime)
        authorization = [v for k, v in scope["headers"] if k == b"authorization"]
        if len(authorization) > 1:
            # the route and the limiter must judge the same key; with several, which one
            # is meant is anyone's guess, so none is
            refusal = error_response(
                400, "invalid_request", "send one Authorization header, not several"
            )
            await refusal(scope, receive, send)
            return
        key = rt.auth.valid_key(authorization[0].decode("latin-1") if authorization else None)
        try:
            if key is not None:
                await rt.limiter.check("key", _key_identity(key))
            else:
                address = client_address(scope, rt.settings.rate_trusted_proxies)
                await rt.limiter.check("address", address_identity(address))
        except RateLimited as exc:
            await response_for(exc)(scope, receive, send)
            return
        await self.app(scope, receive, send)
