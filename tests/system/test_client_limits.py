"""One client cannot take every slot: a real `rankd serve` with small caps, real sockets.

Clients come from different loopback addresses (127.0.0.2, .3, ...: the whole 127/8 is
local), so the service sees them as different clients. Checked: event streams per address
(the excess gets 429 `rate_limited`, other addresses are not affected, a closed stream
frees its slot); idle connections per address (429 past the cap, others still served);
and with the process's cap full, /healthz and /readyz still answer on the probe reserve
while anything else there gets 503, and past the reserve every connection gets 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from rankd.api.server import ADDRESS_PROBE_CONNECTIONS, PROBE_HEADER_TIMEOUT_S
from rankd.embedded import free_port
from tests.support.common import ADMIN, ADMIN_H, SERVER, Urls

CONNECTIONS = 120
PER_ADDRESS = 60
PROBES = 6
STREAMS_PER_ADDRESS = 4

pytestmark = pytest.mark.timeout(120)


@contextlib.asynccontextmanager
async def service(server_dir: Path, urls: Urls) -> AsyncIterator[int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKD_")}
    env |= {
        "RANKD_REDIS_URL": urls.redis,
        "RANKD_POSTGRES_URL": urls.postgres,
        "RANKD_NATS_URL": urls.nats,
        "RANKD_ADMIN_KEYS": ADMIN,
        "RANKD_SERVER_KEYS": SERVER,
        "RANKD_LOG_LEVEL": "error",
        "RANKD_ACCESS_LOG": "false",
        "RANKD_SEASON_JOB_INTERVAL_S": "0",
        "RANKD_HTTP_MAX_CONNECTIONS": str(CONNECTIONS),
        "RANKD_HTTP_MAX_CONNECTIONS_PER_ADDRESS": str(PER_ADDRESS),
        "RANKD_HTTP_PROBE_CONNECTIONS": str(PROBES),
        "RANKD_HTTP_HEADER_TIMEOUT_S": "60",  # idle connections stay for the whole test
        "RANKD_LIVE_MAX_STREAMS_PER_ADDRESS": str(STREAMS_PER_ADDRESS),
    }
    process = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, "-m", "rankd.cli", "serve", "--port", str(port)],
        env=env,
        cwd=server_dir,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient() as http:
            while True:
                assert process.poll() is None, "rankd serve exited"
                with contextlib.suppress(httpx.HTTPError):
                    ready = await http.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
                    if ready.status_code == 200:
                        break
                assert time.monotonic() < deadline, "rankd serve not ready"
                await asyncio.sleep(0.1)
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(process.wait, 30)
        except subprocess.TimeoutExpired:
            process.kill()


class Conn:
    """One raw connection from a chosen loopback address."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int, source: str) -> Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        return cls(reader, writer)

    async def request(self, path: str) -> None:
        self.writer.write(f"GET {path} HTTP/1.1\r\nhost: rankd\r\n\r\n".encode())
        await self.writer.drain()

    async def answer(self, timeout_s: float = 5.0) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and (first part of the) body of the next response."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout_s)
        lines = head.decode().split("\r\n")
        headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
        size = int(headers.get("content-length", "0"))
        body = await asyncio.wait_for(self.reader.readexactly(size), timeout_s) if size else b""
        return int(lines[0].split()[1]), headers, body

    async def refused(
        self, within_s: float = PROBE_HEADER_TIMEOUT_S - 0.5
    ) -> tuple[int, dict[str, Any]] | None:
        """The immediate answer a refused connection gets (None: it was taken, silent).
        Callers wait on many at once; the bound leaves a loaded machine time to answer,
        and stays below PROBE_HEADER_TIMEOUT_S, after which a silent probe-only
        connection is closed."""
        try:
            status, _, body = await self.answer(within_s)
        except TimeoutError:
            return None
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise
            return None  # taken, then closed as an idle probe-only connection
        return status, orjson.loads(body)

    def close(self) -> None:
        self.writer.close()


async def open_many(port: int, source: str, n: int) -> list[Conn]:
    return list(await asyncio.gather(*(Conn.open(port, source) for _ in range(n))))


async def test_streams_and_connections_are_capped_per_address_and_probes_still_answer(
    server_dir: Path, urls: Urls
) -> None:
    async with service(server_dir, urls) as port:
        board = f"caps-{os.urandom(4).hex()}"
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            made = await http.put(f"/v1/boards/{board}", json={}, headers=ADMIN_H)
            assert made.status_code == 201, made.text
        events = f"/v1/boards/{board}/events"
        held: list[Conn] = []
        try:
            # -- event streams: STREAMS_PER_ADDRESS from one address, then 429 ----------
            streams = await open_many(port, "127.0.0.2", STREAMS_PER_ADDRESS + 3)
            held += streams
            for conn in streams:
                await conn.request(events)
            answers = [await conn.answer() for conn in streams]
            statuses = sorted(status for status, _, _ in answers)
            assert statuses == [200] * STREAMS_PER_ADDRESS + [429] * 3, statuses
            refused = next(a for a in answers if a[0] == 429)
            assert refused[1]["content-type"].startswith("application/json")
            assert "retry-after" in refused[1]
            assert orjson.loads(refused[2])["error"]["code"] == "rate_limited"
            other = await Conn.open(port, "127.0.0.3")
            held.append(other)
            await other.request(events)
            assert (await other.answer())[0] == 200, "another address is not affected"
            for conn, answer in zip(streams, answers, strict=True):
                if answer[0] == 429:
                    conn.close()  # (a 429 keeps the connection open, as any answer does)
            # a closed stream frees its slot
            open_streams = [c for c, a in zip(streams, answers, strict=True) if a[0] == 200]
            open_streams[0].close()
            # once the service has seen the close (at once, or a moment later when loaded)
            deadline = time.monotonic() + 10
            while True:
                again = await Conn.open(port, "127.0.0.2")
                held.append(again)
                await again.request(events)
                if (status := (await again.answer())[0]) == 200:
                    break
                again.close()
                assert status == 429 and time.monotonic() < deadline, status
                await asyncio.sleep(0.2)
            print(f"\nstreams from one address: {statuses.count(200)} taken, 3 refused (429)")

            # -- idle connections: PER_ADDRESS from one address, then 429 ------------------
            # 127.0.0.2 holds STREAMS_PER_ADDRESS streams, 127.0.0.3 one
            await asyncio.sleep(0.2)
            idle = await open_many(port, "127.0.0.4", PER_ADDRESS)
            held += idle
            assert all(r is None for r in await asyncio.gather(*(c.refused() for c in idle)))
            # past its cap the address's health checks still answer (on the probe reserve),
            # and nothing else does
            check, read = await Conn.open(port, "127.0.0.4"), await Conn.open(port, "127.0.0.4")
            held += [check, read]
            await check.request("/healthz")
            await read.request(f"/v1/boards/{board}/top")
            (checked, headers, _), (status, _, body) = await check.answer(), await read.answer()
            assert checked == 200 and headers.get("connection") == "close"
            assert (status, orjson.loads(body)["error"]["code"]) == (429, "rate_limited")
            check.close()
            read.close()
            await asyncio.sleep(1.0)  # the service sees the closes (slower when loaded)
            # a flood past the cap: a few taken for probes, the rest refused at once
            flood = await open_many(port, "127.0.0.4", 40)
            results = await asyncio.gather(*(c.refused() for c in flood))
            probing = [c for c, r in zip(flood, results, strict=True) if r is None]
            excess = [r for r in results if r is not None]
            print(
                f"idle connections from one address: {PER_ADDRESS} taken, then of 40 more "
                f"{len(probing)} taken for probes and {len(excess)} refused"
            )
            assert len(probing) == ADDRESS_PROBE_CONNECTIONS, (len(probing), excess[:2])
            assert {(s, b["error"]["code"]) for s, b in excess} == {(429, "rate_limited")}
            for conn in flood:
                conn.close()
            await asyncio.sleep(1.0)
            probe = await Conn.open(port, "127.0.0.5")
            held.append(probe)
            await probe.request(f"/v1/boards/{board}/top")
            assert (await probe.answer())[0] == 200, "another address is still served"

            # -- the process full: probes answer on the reserve, nothing else ------------
            open_now = STREAMS_PER_ADDRESS + 1 + PER_ADDRESS + 1  # streams, other, idle, probe
            fill = await open_many(port, "127.0.0.6", CONNECTIONS - open_now)
            held += fill
            assert all(r is None for r in await asyncio.gather(*(c.refused() for c in fill)))
            reserve = await open_many(port, "127.0.0.7", PROBES)
            held += reserve
            # briefly: these are probe-only, closed if silent for PROBE_HEADER_TIMEOUT_S, and
            # are used below
            assert all(r is None for r in await asyncio.gather(*(c.refused(0.5) for c in reserve)))
            past = await open_many(port, "127.0.0.8", 3)
            held += past
            answered = await asyncio.gather(*(c.refused() for c in past))
            assert all(r is not None and r[0] == 503 for r in answered), answered
            assert all(r is not None and r[1]["error"]["code"] == "unavailable" for r in answered)
            await reserve[0].request("/healthz")
            await reserve[1].request("/readyz")
            await reserve[2].request(f"/v1/boards/{board}/top")
            health, ready, top = [await c.answer() for c in reserve[:3]]
            assert health[0] == 200 and ready[0] == 200, (health, ready)
            assert health[1].get("connection") == "close"  # the reserve is not kept
            assert top[0] == 503 and orjson.loads(top[2])["error"]["code"] == "unavailable"
            print(
                f"process full ({CONNECTIONS}): past the probe reserve 3 of 3 got 503; on it "
                "/healthz 200, /readyz 200, a read 503"
            )
        finally:
            for conn in held:
                conn.close()
