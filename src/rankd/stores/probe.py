"""Can each configured service be reached? One connection each, before anything is started.

``rankd serve`` asks this before it builds the app, so an unreachable or misconfigured
service is reported in one line naming the variable, within the drivers' own connect
timeout, instead of failing deep inside the app's startup.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import nats.errors
import psycopg
from redis.asyncio import Redis
from redis.asyncio.sentinel import MasterNotFoundError
from redis.exceptions import RedisClusterException, RedisError

from rankd.stores.redis.connection import connect
from rankd.stores.redis.url import parse_redis_url

CONNECT_TIMEOUT_S = 5.0  # the same connect timeout the stores use


def _safe(url: str) -> str:
    """The URL without its password (it goes to a terminal or a log)."""
    parts = []
    for one in url.split(","):
        split = urlsplit(one.strip())
        if split.password:
            host = split.netloc.rsplit("@", 1)[-1]
            one = split._replace(netloc=f"{split.username or ''}:***@{host}").geturl()
        parts.append(one.strip())
    return ",".join(parts)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, MasterNotFoundError):
        # redis-py appends the repr of every Sentinel connection tried: say what it means
        group = str(exc).split(" : <", 1)[0].removeprefix("No master found for ").strip()
        return (
            f"no Sentinel answered with a primary for the group {group} (are the Sentinels "
            "up, and do they monitor that name?)"
        )
    text = str(exc).strip().splitlines()
    return (text[0].split(" : <", 1)[0] if text else type(exc).__name__)[:200]


async def _redis(url: str, timeout_s: float) -> None:
    if url.startswith("unix://"):
        client = Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    else:
        # a Cluster's seeds or a Sentinel group's primary, as the service will reach them
        client = connect(parse_redis_url(url), max_connections=2, pool_timeout_s=timeout_s)
    try:
        await client.ping()
    finally:
        await client.aclose()


async def _postgres(url: str, timeout_s: float) -> None:
    conn = await psycopg.AsyncConnection.connect(url, connect_timeout=max(1, int(timeout_s)))
    await conn.close()


async def _nats(url: str, timeout_s: float) -> None:
    """A NATS server says INFO first; any of the listed servers will do. (nats.connect
    without reconnects still waits out its whole timeout on a refused connection.)"""
    failure: BaseException = ConnectionRefusedError("no server answered")
    for one in url.split(","):
        split = urlsplit(one.strip())
        try:
            default_port = {"ws": 80, "wss": 443}.get(split.scheme, 4222)
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(split.hostname, split.port or default_port), timeout_s
            )
        except (OSError, TimeoutError) as exc:
            failure = exc
            continue
        if split.scheme in ("ws", "wss"):  # a websocket endpoint says nothing first
            writer.close()
            return
        try:
            line = await asyncio.wait_for(reader.readline(), timeout_s)
        finally:
            writer.close()
        if line.startswith(b"INFO "):
            return
        failure = ConnectionError(f"not a NATS server (it said {line[:40]!r})")
    raise failure


async def unreachable(
    redis_url: str, postgres_url: str, nats_url: str, timeout_s: float = CONNECT_TIMEOUT_S
) -> list[str]:
    """What cannot be reached, one phrase each naming its variable (empty: all fine)."""

    async def check(variable: str, url: str, probe: object) -> str | None:
        url = _safe(url)
        try:
            await asyncio.wait_for(probe, timeout_s + 1)  # type: ignore[arg-type]
        except TimeoutError:
            return f"{variable}: {url} did not answer within {timeout_s:g}s"
        except (
            RedisError,
            RedisClusterException,
            psycopg.Error,
            nats.errors.Error,
            OSError,
            ValueError,
        ) as exc:
            return f"{variable}: cannot connect to {url}: {_reason(exc)}"
        return None

    found = await asyncio.gather(
        check("RANKD_REDIS_URL", redis_url, _redis(redis_url, timeout_s)),
        check("RANKD_POSTGRES_URL", postgres_url, _postgres(postgres_url, timeout_s)),
        check("RANKD_NATS_URL", nats_url, _nats(nats_url, timeout_s)),
    )
    return [f for f in found if f is not None]
