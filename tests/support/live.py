"""A real HTTP server for tests that stream (the in-process ASGI client buffers whole
responses), and a small Server-Sent Events reader."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import uvicorn
from fastapi import FastAPI

from rankd.api.server import ServerConfig


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[str]:
    """``app`` (its lifespan already entered) on uvicorn on a free loopback port."""
    port = free_port()
    config = ServerConfig(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn offers a flag, not an event)
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        server.force_exit = True  # streams still open would otherwise hold the shutdown
        await asyncio.wait_for(task, 10)


@dataclass
class Event:
    kind: str  # "top", "error", or "comment" for a comment line
    data: Any
    at: float  # monotonic time it arrived


@dataclass
class EventStream:
    """Reads one event stream in the background into ``events``."""

    response: httpx.Response
    events: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None

    async def _read(self) -> None:
        kind, data = "message", []
        async for line in self.response.aiter_lines():
            if line.startswith(":"):
                await self.events.put(Event("comment", line[1:].strip(), time.monotonic()))
            elif line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
            elif line == "" and data:
                parsed = orjson.loads("\n".join(data))
                await self.events.put(Event(kind, parsed, time.monotonic()))
                kind, data = "message", []

    async def next(self, kind: str = "top", within: float = 5.0) -> Event:
        """The next event of ``kind`` (others are skipped)."""
        deadline = time.monotonic() + within
        while True:
            event = await asyncio.wait_for(self.events.get(), deadline - time.monotonic())
            if event.kind == kind:
                return event

    async def quiet(self, seconds: float, kind: str = "top") -> list[Event]:
        """Every event of ``kind`` that arrives within ``seconds``."""
        got: list[Event] = []
        deadline = time.monotonic() + seconds
        with contextlib.suppress(TimeoutError):
            while (left := deadline - time.monotonic()) > 0:
                event = await asyncio.wait_for(self.events.get(), left)
                if event.kind == kind:
                    got.append(event)
        return got


@contextlib.asynccontextmanager
async def open_stream(http: httpx.AsyncClient, path: str) -> AsyncIterator[EventStream]:
    async with http.stream("GET", path) as response:
        assert response.status_code == 200, (await response.aread()).decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        stream = EventStream(response)
        stream.task = asyncio.create_task(stream._read())
        try:
            yield stream
        finally:
            stream.task.cancel()
            await asyncio.gather(stream.task, return_exceptions=True)
