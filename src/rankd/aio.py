"""Small asyncio helpers shared by the stores."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TypeVar

T = TypeVar("T")


async def read_ahead(source: AsyncIterator[T], depth: int) -> AsyncIterator[T]:
    """``source``'s items, read up to ``depth`` ahead by a task, so the source (PostgreSQL,
    Redis) works while the consumer of the items does. The source's failure is raised at
    the end, so a consumer never mistakes a failed read for a complete one."""
    queue: asyncio.Queue[tuple[T] | None] = asyncio.Queue(maxsize=depth)

    async def produce() -> None:
        try:
            async for item in source:
                await queue.put((item,))
        finally:
            await queue.put(None)

    producer = asyncio.create_task(produce())
    try:
        while (held := await queue.get()) is not None:
            yield held[0]
    finally:
        if not producer.done():
            producer.cancel()
        await asyncio.gather(producer, return_exceptions=True)
    producer.result()
