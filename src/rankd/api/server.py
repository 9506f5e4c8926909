"""The HTTP server's guard rails: uvicorn with timeouts it lacks and errors in our shape.

uvicorn (httptools) has a keep-alive timeout but none for a client that opens a connection
and sends its request a byte at a time: such a connection is held forever, and a few
thousand of them hold a process's file descriptors and memory. ``GuardedHttpProtocol``
gives every request a deadline for its headers and one for its body, caps the connections
one process holds, and answers malformed HTTP with the contract's JSON error shape.

One client must not take every slot: connections are also capped per client address (the
TCP peer, an IPv6 address by its /64), and past the process's cap a few more connections
are still taken for the probes alone (``/healthz``, ``/readyz``), so a full process still
answers its health checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
from collections import Counter
from typing import Any

import orjson
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.supervisors import Multiprocess

from rankd import logs, metrics
from rankd.settings import Settings

logger = logging.getLogger("rankd.server")


class ServerConfig(uvicorn.Config):
    """uvicorn's config plus our limits (picklable, so worker processes get them too)."""

    def __init__(
        self,
        app: Any,
        *,
        header_timeout_s: float = 10.0,
        body_timeout_s: float = 30.0,
        max_connections: int = 4096,
        max_connections_per_address: int = 0,
        probe_connections: int = 64,
        **options: Any,
    ) -> None:
        # proxy_headers off: uvicorn would otherwise take X-Forwarded-For from 127.0.0.1
        # (its default forwarded_allow_ips) as the client's address, so anyone on the host,
        # or a local proxy passing the header through, picks the address the rate limit
        # counts. The limiter reads the header itself, only as RANKD_RATE_TRUSTED_PROXIES
        # allows (api/rate_limit.py).
        options["proxy_headers"] = False
        # before uvicorn's __init__, which configures logging already
        self.rankd_log_level = str(options.get("log_level") or "info")
        super().__init__(app, http=GuardedHttpProtocol, server_header=False, **options)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.max_connections = max_connections
        self.max_connections_per_address = max_connections_per_address  # 0: no cap
        self.probe_connections = probe_connections
        # open connections per client address in this process; an address leaves it when
        # its last connection closes, so it holds at most one entry per open connection
        self.per_address: Counter[str] = Counter()
        # probe-only connections of addresses at their cap (at most ADDRESS_PROBE_CONNECTIONS
        # each, and within the probe reserve), by address; gone with their last one
        self.probes_per_address: Counter[str] = Counter()

    def configure_logging(self) -> None:
        # called in the parent and again in each spawned worker: a worker's lines then look
        # exactly as a single process's (logs.py)
        super().configure_logging()
        logs.configure(self.rankd_log_level)


class Workers(Multiprocess):
    """uvicorn's worker supervisor, which also tells the metrics when a worker is gone (a
    dead worker's live gauges leave the sums; uvicorn starts a new worker in its place)."""

    def __init__(self, config: ServerConfig, sockets: list[Any]) -> None:
        super().__init__(config, sockets)
        self._pids: set[int] = set()

    def keep_subprocess_alive(self) -> None:
        # runs every half second, after any restart a signal asked for
        super().keep_subprocess_alive()
        pids = {process.pid for process in self.processes if process.pid is not None}
        for pid in self._pids - pids:
            metrics.worker_gone(pid)
        self._pids = pids


def _error(status: bytes, code: str, message: str, *, retry_after_s: int | None = None) -> bytes:
    body = orjson.dumps({"error": {"code": code, "message": message}})
    retry = b"" if retry_after_s is None else b"retry-after: %d\r\n" % retry_after_s
    return (
        b"HTTP/1.1 %b\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
        b"%bconnection: close\r\n\r\n%b" % (status, len(body), retry, body)
    )


PROBE_PATHS = frozenset({"/healthz", "/readyz"})
PROBE_HEADER_TIMEOUT_S = 2.0  # a probe-only connection must send its request at once
ADDRESS_PROBE_CONNECTIONS = 4  # probe-only connections an address at its cap may hold


def address_of(client: tuple[str, int] | None) -> str:
    """Whose connection this is: the peer's address, an IPv6 one by its /64 (one host
    usually holds a whole /64)."""
    if not client:
        return "unknown"
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return client[0]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is None:
        return str(ipaddress.IPv6Network((address, 64), strict=False).network_address) + "/64"
    return str(address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else address)


def probes_only(
    app: ASGIApp,
    status: int = 503,
    code: str = "unavailable",
    message: str = "too many connections; retry",
) -> ASGIApp:
    """The app for a connection taken past a cap (the process's, or its address's): the
    probes are served (and the connection closed after), anything else gets the cap's
    refusal (503, or 429 for an address)."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in PROBE_PATHS:

            async def closing(message: Message) -> None:
                if message["type"] == "http.response.start":
                    headers = [*message.get("headers", []), (b"connection", b"close")]
                    message = {**message, "headers": headers}
                await send(message)

            await app(scope, receive, closing)
            return
        body = orjson.dumps({"error": {"code": code, "message": message}})
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
            (b"connection", b"close"),
        ]
        if status == 429:
            headers.append((b"retry-after", b"1"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return guarded


def _release(held: Counter[str], address: str) -> None:
    """One connection of ``address`` closed: an address leaves with its last one, so the
    counter holds at most one entry per open connection."""
    if held[address] > 1:
        held[address] -= 1
    else:
        del held[address]


class GuardedHttpProtocol(HttpToolsProtocol):
    config: ServerConfig
    _deadline: asyncio.TimerHandle | None = None
    _address: str | None = None  # set while this connection counts against its address
    _probing: str | None = None  # set while it is a full address's probe-only connection
    _begun = False  # a request's first bytes arrived and it is not complete yet

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        config = self.config
        address = address_of(self.client)
        held = config.per_address[address]
        open_now = len(self.connections)
        if config.max_connections_per_address and held >= config.max_connections_per_address:
            logger.warning("refusing a connection from %s: it holds %d", address, held)
            metrics.CONNECTIONS_REFUSED.labels("address").inc()
            limit = config.max_connections_per_address
            message = f"too many connections from this address (limit {limit}); close some"
            probing = config.probes_per_address[address]
            if (
                probing < ADDRESS_PROBE_CONNECTIONS
                and open_now <= config.max_connections + config.probe_connections
            ):
                # a few of the probe reserve serve a full address's health checks (a load
                # balancer probes from the address its traffic comes from); a flood past
                # them is refused at once
                config.probes_per_address[address] = probing + 1
                self._probing = address
                self.app = probes_only(self.app, 429, "rate_limited", message)
                self._arm(min(PROBE_HEADER_TIMEOUT_S, config.header_timeout_s))
                return
            transport.write(
                _error(b"429 Too Many Requests", "rate_limited", message, retry_after_s=1)
            )
            transport.close()
            return
        if open_now > config.max_connections + config.probe_connections:
            logger.warning("refusing a connection: %d open", open_now)
            metrics.CONNECTIONS_REFUSED.labels("process").inc()
            transport.write(
                _error(b"503 Service Unavailable", "unavailable", "too many connections; retry")
            )
            transport.close()
            return
        config.per_address[address] = held + 1
        self._address = address
        if open_now > config.max_connections:
            # past the cap: taken only so the probes still answer (see probes_only)
            self.app = probes_only(self.app)
            self._arm(min(PROBE_HEADER_TIMEOUT_S, config.header_timeout_s))
            return
        self._arm(config.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._probing is not None:
            _release(self.config.probes_per_address, self._probing)
            self._probing = None
        if self._address is not None:
            _release(self.config.per_address, self._address)
            self._address = None
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._begun = True
        self._arm(self.config.header_timeout_s)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._arm(self.config.body_timeout_s)
        cycle = self.cycle  # this request's (an upgrade leaves the last request's)
        if cycle is not None and not isinstance(cycle.transport, JoinedHead):
            cycle.transport = JoinedHead(cycle.transport, self.loop)  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        self._disarm()
        self._begun = False
        super().on_message_complete()

    def shutdown(self) -> None:
        # uvicorn closes the connection itself when its response is complete, in the turn
        # its shutdown runs in: a head still held (a HEAD answer writes no body) goes first
        self._flush_held()
        super().shutdown()

    def _flush_held(self) -> None:
        """Send the bytes the current response's JoinedHead holds, before a close of the
        connection's own transport would drop them."""
        transport = self.cycle.transport if self.cycle is not None else None
        if isinstance(transport, JoinedHead):
            transport.flush()

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
        logger.debug("closing a connection that sent its request too slowly")
        self._flush_held()
        # A connection that has sent nothing is idle, not slow: it is closed as keep-alive
        # closes one, with no answer, since a client reads an unasked 408 as the answer to
        # the request it sends next (a pool's connection opened ahead and not used yet).
        if self._begun and (self.cycle is None or not self.cycle.response_started):
            self.transport.write(
                _error(b"408 Request Timeout", "request_timeout", "the request came too slowly")
            )
        self.transport.close()


class JoinedHead:
    """A response's transport whose head leaves with the body's first write.

    uvicorn writes a response's status line and headers when the app sends
    ``http.response.start``, and the body on ``http.response.body``: two socket writes
    (uvloop sends each at once), two TCP segments, and the client wakes for each. A small
    JSON answer is both in one turn of the event loop, so the head is held until the next
    write and leaves with it, or at the end of this turn (a streamed response, a
    ``100 Continue``) if none comes. Everything else is the connection's own transport.
    """

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + data)
        elif data.startswith(b"HTTP/"):
            self._held = data
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def run(settings: Settings, *, host: str, port: int, workers: int) -> bool:
    """Serve the API on ``host``:``port`` with ``workers`` processes until Ctrl-C or SIGTERM;
    False if it never started (e.g. the port is taken; uvicorn has logged why)."""
    from rankd.api.app import create_app

    config = ServerConfig(
        # each worker process builds its own app from these settings (pickled to it)
        functools.partial(create_app, settings, tune_gc=True),
        factory=True,
        host=host,
        port=port,
        workers=workers,
        loop="uvloop",
        log_level=settings.log_level,
        # uvicorn's own lines go through the root logger too, in the service's format
        # (logs.py), in the parent and in every worker alike
        log_config=None,
        access_log=False,
        timeout_keep_alive=settings.http_keep_alive_s,
        header_timeout_s=settings.http_header_timeout_s,
        body_timeout_s=settings.http_body_timeout_s,
        max_connections=settings.http_max_connections,
        max_connections_per_address=settings.http_max_connections_per_address,
        probe_connections=settings.http_probe_connections,
    )
    if workers > 1:
        # the folder is set before any worker is spawned, so every worker counts into it
        with metrics.shared_folder(), contextlib.suppress(KeyboardInterrupt):
            Workers(config, sockets=[config.bind_socket()]).run()
        return True
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises Ctrl-C once done
        server.run()
    return bool(server.started)
