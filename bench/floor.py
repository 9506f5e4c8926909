"""The floor under each hot route: what a bare Python server does under the same `wrk` load.

Each floor is a tiny app, served one process at a time, that answers every request with the
same fixed 200-byte JSON body after doing one piece of Rankd's work on the same servers:

* ``http``: nothing; the HTTP server's own cost (uvicorn with uvloop and httptools, as
  ``rankd serve`` runs, or granian through ASGI or its native RSGI interface);
* ``evalsha``: one ``EVALSHA`` of the rank script (``own_entry``) for the player in the
  path (rank.lua's requests), from redis-py (with hiredis, as Rankd), coredis or
  valkey-glide;
* ``publish``: one JetStream publish of the request body with a ``Nats-Msg-Id``, awaited
  until acknowledged (a durable submit's log write), to a stream of its own configured as
  Rankd's (file storage, two-minute duplicate window).

A route's rate over its floor's tells how close to the limit it is; the floors side by side
tell which layer costs what. ``python -m bench.wrk`` measures them in its run (see there);
this module is also the floor process itself:

    python -m bench.floor --kind evalsha --client redis-py --server uvicorn --port 8100 \
        --redis-url redis://127.0.0.1:6379
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import httpx

from rankd.embedded import EmbeddedServers, free_port
from rankd.stores.redis.keys import period_keys
from rankd.stores.redis.scripts import OWN_ENTRY

BODY = (
    b'{"board_id":"wrk","player_id":"p1","rank":1,"score":1,"entries":20000,"pad":"' + b"x" * 200
)[:198] + b'"}'
assert len(BODY) == 200
HEADERS = [(b"content-type", b"application/json"), (b"content-length", b"200")]
KEYS = period_keys("wrk", "all-time", "all-time")
STREAM, SUBJECT = "FLOOR", "floor.wrk"
KINDS = ("http", "evalsha", "publish")
SERVERS = ("uvicorn", "granian", "granian-rsgi")
CLIENTS = ("redis-py", "coredis", "glide")

Work = Callable[[str, bytes], Awaitable[None]]


# --- the work behind each floor ---------------------------------------------------------------


async def _nothing(path: str, body: bytes) -> None:
    return None


def _player(path: str) -> str:
    return path.rsplit("/", 1)[-1] or "p1"


async def _redis_py(url: str) -> Work:
    from redis.asyncio import Redis

    client = Redis.from_url(url)
    sha = await client.script_load(OWN_ENTRY.source)
    keys = (KEYS.public, KEYS.shadow, KEYS.pending)

    async def work(path: str, body: bytes) -> None:
        await client.evalsha(sha, 3, *keys, _player(path))

    return work


async def _coredis(url: str) -> Work:
    import coredis

    client: Any = coredis.Redis.from_url(url)
    with contextlib.suppress(AttributeError, TypeError):
        # coredis 6 clients are entered once (their connection pool's task group)
        await client.__aenter__()
    sha = await client.script_load(OWN_ENTRY.source)
    keys = [KEYS.public, KEYS.shadow, KEYS.pending]

    async def work(path: str, body: bytes) -> None:
        await client.evalsha(sha, keys=keys, args=[_player(path)])

    return work


async def _glide(url: str) -> Work:
    from urllib.parse import urlparse

    from glide import GlideClient, GlideClientConfiguration, NodeAddress

    parsed = urlparse(url)
    config = GlideClientConfiguration([NodeAddress(parsed.hostname or "127.0.0.1", parsed.port)])
    client = await GlideClient.create(config)
    sha = await client.custom_command(["SCRIPT", "LOAD", OWN_ENTRY.source])
    sha_text = sha.decode() if isinstance(sha, bytes) else str(sha)
    keys = [KEYS.public, KEYS.shadow, KEYS.pending]

    async def work(path: str, body: bytes) -> None:
        await client.custom_command(["EVALSHA", sha_text, "3", *keys, _player(path)])

    return work


async def _publish(url: str) -> Work:
    import nats
    from nats.js.api import StorageType, StreamConfig

    nc = await nats.connect(url, pending_size=0)
    js = nc.jetstream(timeout=5)
    with contextlib.suppress(Exception):
        await js.delete_stream(STREAM)
    await js.add_stream(
        StreamConfig(
            name=STREAM, subjects=[SUBJECT], storage=StorageType.FILE, duplicate_window=120.0
        )
    )
    counter = iter(range(1 << 62))
    prefix = f"{os.getpid()}-{time.time_ns()}-"

    async def work(path: str, body: bytes) -> None:
        await js.publish(
            SUBJECT, body, timeout=5, headers={"Nats-Msg-Id": f"{prefix}{next(counter)}"}
        )

    return work


async def make_work(kind: str, client: str, redis_url: str, nats_url: str) -> Work:
    if kind == "http":
        return _nothing
    if kind == "publish":
        return await _publish(nats_url)
    return await {"redis-py": _redis_py, "coredis": _coredis, "glide": _glide}[client](redis_url)


# --- the apps ---------------------------------------------------------------------------------


def asgi_app(kind: str, client: str, redis_url: str, nats_url: str) -> Any:
    """A bare ASGI app: read the body, do the floor's work, answer BODY."""
    work: Work | None = None

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal work
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    work = await make_work(kind, client, redis_url, nats_url)
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        assert work is not None
        await work(scope["path"], body)
        await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
        await send({"type": "http.response.body", "body": BODY})

    return app


class RsgiApp:
    """The same on granian's RSGI interface."""

    def __init__(self, kind: str, client: str, redis_url: str, nats_url: str) -> None:
        self.args = (kind, client, redis_url, nats_url)
        self.work: Work | None = None
        self.headers = [(k.decode(), v.decode()) for k, v in HEADERS]

    def __rsgi_init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.work = loop.run_until_complete(make_work(*self.args))

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        body = await proto()
        assert self.work is not None
        await self.work(scope.path, body)
        proto.response_bytes(200, self.headers, BODY)


def app_from_env() -> Any:
    """The app granian imports (``--factory``): its settings come from FLOOR_* variables."""
    args = (
        os.environ["FLOOR_KIND"],
        os.environ.get("FLOOR_CLIENT", "redis-py"),
        os.environ.get("FLOOR_REDIS_URL", ""),
        os.environ.get("FLOOR_NATS_URL", ""),
    )
    if os.environ.get("FLOOR_INTERFACE") == "rsgi":
        return RsgiApp(*args)
    return asgi_app(*args)


# --- the process ------------------------------------------------------------------------------


def command(server: str, port: int) -> list[str]:
    if server == "uvicorn":
        return [sys.executable, "-m", "bench.floor", "--port", str(port)]
    interface = "rsgi" if server == "granian-rsgi" else "asgi"
    granian = os.path.join(os.path.dirname(sys.executable), "granian")
    return [
        granian,
        "--interface",
        interface,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--loop",
        "uvloop",
        "--http",
        "1",
        "--no-ws",
        "--log-level",
        "warning",
        "--factory",
        "bench.floor:app_from_env",
    ]


@contextlib.contextmanager
def floor_process(
    stack: EmbeddedServers, kind: str, server: str = "uvicorn", client: str = "redis-py"
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """A floor app serving on a fresh port; yields the port and process once it answers."""
    port = free_port()
    env = {
        **os.environ,
        "FLOOR_KIND": kind,
        "FLOOR_CLIENT": client,
        "FLOOR_REDIS_URL": stack.redis_url,
        "FLOOR_NATS_URL": stack.nats_url,
        "FLOOR_INTERFACE": "rsgi" if server == "granian-rsgi" else "asgi",
    }
    process = subprocess.Popen(command(server, port), env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    break
            if process.poll() is not None:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"floor {kind}/{server}/{client} exited: {err[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"floor {kind}/{server}/{client} did not answer")
            time.sleep(0.2)
        yield port, process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="a floor app on uvicorn (see the docstring)")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    import uvicorn

    uvicorn.run(
        app_from_env(),
        host="127.0.0.1",
        port=args.port,
        loop="uvloop",
        http="httptools",
        lifespan="on",
        access_log=False,
        log_level="warning",
        server_header=False,
        date_header=True,
    )


if __name__ == "__main__":
    main()
