"""The durable log of runs: NATS JetStream behind a small interface.

Every accepted run is published here first and the service waits for the stream's ack
before touching Redis; a run without an ack is refused (503) and applied nowhere. The
embedded server fsyncs every write (``sync_interval: always``). Another log (Kafka, where a
broker exists) would implement the same ``RunLog`` protocol.
"""

from __future__ import annotations

from typing import Protocol

import nats
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError

from rankd.errors import Unavailable


class RunLog(Protocol):
    async def publish(self, board_id: str, payload: bytes, msg_id: str) -> int:
        """Append one message; return its sequence once durable. Raises Unavailable."""
        ...

    async def ping(self) -> None: ...


class JetStreamLog:
    def __init__(self, url: str, *, stream: str, subject_prefix: str, timeout_s: float) -> None:
        self.url = url
        self.stream = stream
        self.subject_prefix = subject_prefix
        self.timeout_s = timeout_s
        self.nc: NATS | None = None
        self.js: JetStreamContext | None = None

    async def open(self) -> None:
        self.nc = await nats.connect(
            self.url,
            allow_reconnect=True,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.25,
            connect_timeout=5,
            name="rankd",
            # No client-side buffering while reconnecting: a publish either reaches the
            # server now or fails now (503), never lands later after we said "not accepted".
            pending_size=0,
        )
        self.js = self.nc.jetstream(timeout=self.timeout_s)
        await self.ensure_stream()

    async def ensure_stream(self) -> None:
        assert self.js is not None
        config = StreamConfig(
            name=self.stream,
            subjects=[f"{self.subject_prefix}.>"],
            storage=StorageType.FILE,
            duplicate_window=120.0,
        )
        try:
            await self.js.stream_info(self.stream)
        except NotFoundError:
            await self.js.add_stream(config)

    async def close(self) -> None:
        # close, not drain: every publish was awaited already, and draining a connection
        # with a pull subscription waits out its whole drain timeout (30 s)
        if self.nc is not None and not self.nc.is_closed:
            await self.nc.close()

    async def publish(self, board_id: str, payload: bytes, msg_id: str) -> int:
        if self.js is None or self.nc is None or not self.nc.is_connected:
            raise Unavailable("the run log is unreachable; nothing was accepted, retry")
        try:
            ack = await self.js.publish(
                f"{self.subject_prefix}.{board_id}",
                payload,
                timeout=self.timeout_s,
                headers={"Nats-Msg-Id": msg_id},
            )
        except (TimeoutError, nats.errors.Error) as exc:
            raise Unavailable(
                "the run could not be made durable in the log; nothing was accepted, retry"
            ) from exc
        return int(ack.seq)

    async def ping(self) -> None:
        if self.js is None or self.nc is None or not self.nc.is_connected:
            raise Unavailable("not connected to NATS")
        await self.js.stream_info(self.stream)
