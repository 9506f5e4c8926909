"""The HTTP server's guard rails, on a real uvicorn server and raw sockets: slow senders are
cut, malformed HTTP gets the JSON error shape, connections are capped, no server header."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import uvicorn

from rankd.api.server import ServerConfig


async def hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def serving(app: Any, **options: Any) -> AsyncIterator[uvicorn.Server]:
    """``app`` served by rankd's server on a free loopback port until the block ends."""
    config = ServerConfig(
        app, host="127.0.0.1", port=free_port(), log_level="warning", lifespan="off", **options
    )
    served = uvicorn.Server(config)
    task = asyncio.create_task(served.serve())
    while not served.started:  # noqa: ASYNC110 (uvicorn offers a flag, not an event)
        await asyncio.sleep(0.01)
    try:
        yield served
    finally:
        served.should_exit = True
        await task


@pytest.fixture
async def server() -> AsyncIterator[int]:
    options = {"header_timeout_s": 0.5, "body_timeout_s": 0.5, "max_connections": 3}
    async with serving(hello, **options) as served:
        yield served.config.port


async def exchange(port: int, *parts: bytes, pause_s: float = 0.0) -> tuple[bytes, float]:
    """Send ``parts`` with a pause between them; read until the server closes (or 5 s)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()

    async def send() -> None:
        for part in parts:
            if writer.is_closing():
                return
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(pause_s)

    sending = asyncio.create_task(send())
    try:
        data = await asyncio.wait_for(reader.read(), timeout=5)
    except ConnectionResetError:
        data = b""
    finally:
        sending.cancel()
        await asyncio.gather(sending, return_exceptions=True)
        writer.close()
    return data, time.monotonic() - started


def status_and_body(response: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), orjson.loads(body)


async def test_a_slow_header_sender_is_cut_with_408(server: int) -> None:
    drip = [bytes([b]) for b in b"GET / HTTP/1.1\r\nHost: x\r\n"]
    response, took = await exchange(server, *drip, pause_s=0.1)
    status, body = status_and_body(response)
    assert status == 408 and body["error"]["code"] == "request_timeout"
    assert took < 4


async def test_a_connection_that_sends_nothing_is_closed_without_an_answer(server: int) -> None:
    # idle, not slow: an unasked 408 would be read as the answer to the next request sent
    response, took = await exchange(server)
    assert response == b""
    assert 0.4 < took < 4


async def test_a_slow_body_sender_is_cut(server: int) -> None:
    head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    response, took = await exchange(server, head, b"x" * 10, b"y" * 10, pause_s=0.4)
    assert status_and_body(response)[0] == 408
    assert took < 4


async def test_a_prompt_request_is_served_without_a_server_header(server: int) -> None:
    response, _ = await exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 200")
    assert b"\r\nserver:" not in response.lower()


async def test_keep_alive_requests_each_get_their_own_deadline(server: int) -> None:
    request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    last = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    response, _ = await exchange(server, request, request, last, pause_s=0.3)
    assert response.count(b"HTTP/1.1 200") == 3


async def test_malformed_http_gets_the_json_error_shape(server: int) -> None:
    response, _ = await exchange(server, b"BLAH\x00 / HTTP/1.1\r\n\r\n")
    status, body = status_and_body(response)
    assert status == 400 and body["error"]["code"] == "invalid_request"


async def test_connections_past_the_cap_are_refused_with_503(server: int) -> None:
    held = [await asyncio.open_connection("127.0.0.1", server) for _ in range(3)]
    try:
        response, _ = await exchange(server, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        status, body = status_and_body(response)
        assert status == 503 and body["error"]["code"] == "unavailable"
    finally:
        for _, writer in held:
            writer.close()


async def test_a_response_leaves_in_one_write_and_a_streamed_one_still_flows() -> None:
    """The head is held until the body's first write (JoinedHead): a small answer arrives
    whole in one read; a streamed response's head leaves at once, before its body; a
    client that asks for 100 Continue gets it before sending the body."""
    from rankd.api.server import JoinedHead

    writes: list[bytes] = []

    class Recorder:
        def write(self, data: bytes) -> None:
            writes.append(data)

        def is_closing(self) -> bool:
            return False

    loop = asyncio.get_running_loop()
    joined = JoinedHead(Recorder(), loop)  # type: ignore[arg-type]
    joined.write(b"HTTP/1.1 200 OK\r\n\r\n")
    joined.write(b"{}")
    assert writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
    joined.write(b"HTTP/1.1 200 OK\r\n\r\n")  # a streamed response: no body in this turn
    assert len(writes) == 1
    await asyncio.sleep(0)
    assert writes[1] == b"HTTP/1.1 200 OK\r\n\r\n"
    joined.write(b"data: 1\n\n")  # a later chunk goes at once
    assert writes[2] == b"data: 1\n\n"

    async def streamed(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await asyncio.sleep(0.2)
        await send({"type": "http.response.body", "body": b"late"})

    async with serving(streamed) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.config.port)
        writer.write(
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n"
            b"Connection: close\r\n\r\n"
        )
        await writer.drain()
        assert (await asyncio.wait_for(reader.readline(), 2)).startswith(b"HTTP/1.1 100")
        writer.write(b"{}")
        await writer.drain()
        await asyncio.wait_for(reader.readuntil(b"HTTP/1.1 200"), 2)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 0.15)  # before the body
        assert b"transfer-encoding: chunked" in head.lower()
        assert b"late" in await asyncio.wait_for(reader.read(), 2)
        writer.close()


async def test_a_head_answer_ending_as_the_server_shuts_down_still_leaves() -> None:
    """A HEAD answer writes no body, so its head is held to the end of the loop turn
    (JoinedHead). uvicorn's graceful shutdown closes a connection whose response is complete
    at once, in the turn its tick wakes in; the held head must leave before that close."""

    async def shutting(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})
        # what Server.shutdown does, here in the same turn as the answer's end
        for connection in list(served.server_state.connections):
            connection.shutdown()

    async with serving(shutting) as served:
        response, _ = await exchange(served.config.port, b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert response.startswith(b"HTTP/1.1 200") and b"content-length: 2" in response
