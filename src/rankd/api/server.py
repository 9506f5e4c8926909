"""The HTTP server's guard rails: uvicorn with timeouts it lacks and errors in our shape.

uvicorn (httptools) has a keep-alive timeout but none for a client that opens a connection
and sends its request a byte at a time: such a connection is held forever, and a few
thousand of them hold a process's file descriptors and memory. ``GuardedHttpProtocol``
gives every request a deadline for its headers and one for its body, caps the connections
one process holds, and answers malformed HTTP with the contract's JSON error shape.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("rankd.server")


class ServerConfig(uvicorn.Config):
    """uvicorn's config plus our limits (picklable, so worker processes get them too)."""

    def __init__(
        self,
        app: Any,
        *,
        header_timeout_s: float = 10.0,
        body_timeout_s: float = 30.0,
        max_connections: int = 4096,
        **options: Any,
    ) -> None:
        # proxy_headers off: uvicorn would otherwise take X-Forwarded-For from 127.0.0.1
        # (its default forwarded_allow_ips) as the client's address, so anyone on the host,
        # or a local proxy passing the header through, picks the address the rate limit
        # counts. The limiter reads the header itself, only as RANKD_RATE_TRUSTED_PROXIES
        # allows (api/rate_limit.py).
        options["proxy_headers"] = False
        super().__init__(app, http=GuardedHttpProtocol, server_header=False, **options)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.max_connections = max_connections


def _error(status: bytes, code: str, message: str) -> bytes:
    body = orjson.dumps({"error": {"code": code, "message": message}})
    return (
        b"HTTP/1.1 %b\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
        b"connection: close\r\n\r\n%b" % (status, len(body), body)
    )


class GuardedHttpProtocol(HttpToolsProtocol):
    config: ServerConfig
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.config.max_connections:
            log.warning("refusing a connection: %d open", len(self.connections))
            transport.write(
                _error(b"503 Service Unavailable", "unavailable", "too many connections; retry")
            )
            transport.close()
            return
        self._arm(self.config.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(self.config.header_timeout_s)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._arm(self.config.body_timeout_s)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        self._disarm()
        self.transport.write(
            _error(b"400 Bad Request", "invalid_request", "the request is not valid HTTP/1.1")
        )
        self.transport.close()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        log.debug("closing a connection that sent its request too slowly")
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(
                _error(b"408 Request Timeout", "request_timeout", "the request came too slowly")
            )
        self.transport.close()
