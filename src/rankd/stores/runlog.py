"""The durable log of runs: NATS JetStream behind a small interface.

Every accepted run is published here first and the service waits for the stream's ack
before touching Redis; a run without an ack is refused (503) and applied nowhere. The
embedded server fsyncs every write (``sync_interval: always``). The log consumer and
``rankd replay`` read it back through the same interface, as ``LogMessage`` batches.

Another log (Kafka, where a broker exists) would implement the same ``RunLog`` protocol:
nothing outside this module knows about NATS, and its errors leave here as
``LogUnavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

import nats
import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig
from nats.js.errors import APIError, BadRequestError, NotFoundError, ServiceUnavailableError

from rankd.errors import LogUnavailable

# the shapes, named here too for the modules that import them from the log
from rankd.stores.log_shapes import Durable as Durable
from rankd.stores.log_shapes import LogLag as LogLag
from rankd.stores.log_shapes import LogMessage as LogMessage
from rankd.stores.log_shapes import LogState as LogState
from rankd.stores.log_shapes import subject_token as subject_token
from rankd.stores.log_shapes import time_ms
from rankd.stores.log_shapes import unapplied_from as unapplied_from


class LogSubscription(Protocol):
    async def fetch(self, n: int, timeout_s: float) -> list[LogMessage]:
        """Up to ``n`` messages, in log order; [] when none came within ``timeout_s``."""
        ...

    async def ack(self, messages: Sequence[LogMessage]) -> None:
        """Done with ``messages``: they are not delivered again."""
        ...

    async def working(self, messages: Sequence[LogMessage]) -> None:
        """Still applying ``messages``: the log waits another ack wait before it would
        deliver them again."""
        ...

    async def close(self) -> None: ...


class RunLog(Protocol):
    """Every method raises ``LogUnavailable`` when the log cannot answer."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def ping(self) -> None: ...

    async def publish(self, board_id: str, payload: bytes, msg_id: str) -> int:
        """Append one message; return its sequence once durable."""
        ...

    async def last_sequence(self) -> int:
        """The sequence of the newest message (0 for an empty log)."""
        ...

    async def first_sequence(self) -> int:
        """The sequence of the oldest message still in the log (older ones were removed
        by its retention or erased); last_sequence() + 1 for an empty log."""
        ...

    async def subscribe(self, durable: Durable) -> LogSubscription:
        """Join the shared consumer ``durable`` (created on first use)."""
        ...

    async def read_from(self, sequence: int) -> LogSubscription:
        """A private reader of every message from ``sequence`` on (for replays)."""
        ...

    async def state(self) -> LogState:
        """The stream's first and last sequence, message count and bytes."""
        ...

    async def received_at(self, sequence: int) -> tuple[int, int] | None:
        """The first message at or after ``sequence``: (its sequence, when the log stored it,
        ms); None when there is none."""
        ...

    async def purge_before(self, sequence: int) -> None:
        """Drop every message below ``sequence`` (services/log_retention.py decides)."""
        ...

    async def erase(self, sequence: int) -> None:
        """Remove one message for good, its stored bytes overwritten (not just unlinked);
        a message already gone is fine."""
        ...

    async def lag(self, durable: str) -> LogLag:
        """How far the shared consumer named ``durable`` is behind the log."""
        ...


class JetStreamSubscription:
    """A pull subscription; it subscribes (again) on the next fetch after losing its consumer."""

    def __init__(
        self, js: JetStreamContext, subject: str, stream: str, config: ConsumerConfig
    ) -> None:
        self.js = js
        self.subject = subject
        self.stream = stream
        self.config = config
        self._sub: Any = None

    async def open(self) -> None:
        try:
            self._sub = await self.js.pull_subscribe(
                self.subject,
                durable=self.config.durable_name,
                stream=self.stream,
                config=self.config,
            )
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"cannot subscribe to the run log: {exc!r}") from exc

    async def fetch(self, n: int, timeout_s: float) -> list[LogMessage]:
        if self._sub is None:
            await self.open()
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            try:
                msgs: list[Msg] = await self._sub.fetch(n, timeout=timeout_s)
                break
            except TimeoutError:  # nats.errors.TimeoutError is one too
                return []
            except NotFoundError as exc:  # the consumer was deleted: make it again next time
                self._sub = None
                raise LogUnavailable(f"the log consumer is gone: {exc!r}") from exc
            except (ServiceUnavailableError, nats.errors.NoRespondersError) as exc:
                # a consumer just made on a replicated stream answers once its leader is
                # elected (a moment, on a JetStream cluster): wait for it, within the timeout
                if asyncio.get_running_loop().time() >= deadline:
                    raise LogUnavailable(f"cannot read the run log: {exc!r}") from exc
                await asyncio.sleep(0.05)
            except (nats.errors.Error, OSError) as exc:
                raise LogUnavailable(f"cannot read the run log: {exc!r}") from exc
        return [LogMessage.of_jetstream(m) for m in msgs]

    async def ack(self, messages: Sequence[LogMessage]) -> None:
        try:
            for m in messages:
                if isinstance(m.handle, Msg):
                    await m.handle.ack()
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"cannot ack in the run log: {exc!r}") from exc

    async def working(self, messages: Sequence[LogMessage]) -> None:
        try:
            for m in messages:
                if isinstance(m.handle, Msg):
                    await m.handle.in_progress()  # +WPI: restarts the message's ack wait
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"cannot tell the run log about progress: {exc!r}") from exc

    async def close(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            # a closed connection has no subscription left to end
            with contextlib.suppress(nats.errors.Error, OSError, ValueError):
                await sub.unsubscribe()


class JetStreamLog:
    def __init__(
        self,
        url: str,
        *,
        stream: str,
        subject_prefix: str,
        timeout_s: float,
        replicas: int = 1,
    ) -> None:
        self.url = url
        # every server of a JetStream cluster: the client moves to another when one goes
        self.servers = [u.strip() for u in url.split(",") if u.strip()]
        self.replicas = replicas
        self.stream = stream
        self.subject_prefix = subject_prefix
        self.timeout_s = timeout_s
        self.nc: NATS | None = None
        self.js: JetStreamContext | None = None

    async def open(self) -> None:
        try:
            self.nc = await nats.connect(
                self.servers,
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
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"cannot open the run log at {self.url}: {exc!r}") from exc

    async def ensure_stream(self) -> None:
        js = self._js()
        config = StreamConfig(
            name=self.stream,
            subjects=[f"{self.subject_prefix}.>"],
            storage=StorageType.FILE,
            duplicate_window=120.0,
            num_replicas=self.replicas,
        )
        try:
            await js.stream_info(self.stream)
        except NotFoundError:
            await js.add_stream(config)

    async def close(self) -> None:
        # close, not drain: every publish was awaited already, and draining a connection
        # with a pull subscription waits out its whole drain timeout (30 s)
        if self.nc is not None and not self.nc.is_closed:
            await self.nc.close()

    def _js(self) -> JetStreamContext:
        if self.js is None or self.nc is None or not self.nc.is_connected:
            raise LogUnavailable("not connected to the run log")
        return self.js

    def subject(self, board_id: str) -> str:
        return f"{self.subject_prefix}.{subject_token(board_id)}"

    async def publish(self, board_id: str, payload: bytes, msg_id: str) -> int:
        if self.js is None or self.nc is None or not self.nc.is_connected:
            raise LogUnavailable("the run log is unreachable; nothing was accepted, retry")
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        while True:
            try:
                ack = await self.js.publish(
                    self.subject(board_id),
                    payload,
                    timeout=self.timeout_s,
                    headers={"Nats-Msg-Id": msg_id},
                )
            except (TimeoutError, nats.errors.Error) as exc:
                # A replicated stream refuses a message whose id an identical one still being
                # replicated holds ("duplicate message id is in process"); once that one is
                # stored, a resend is answered as its duplicate, with its sequence.
                if (
                    isinstance(exc, APIError)
                    and "in process" in str(exc.description or "")
                    and asyncio.get_running_loop().time() < deadline
                ):
                    await asyncio.sleep(0.005)
                    continue
                raise LogUnavailable(
                    "the run could not be made durable in the log; nothing was accepted, retry"
                ) from exc
            return int(ack.seq)

    async def ping(self) -> None:
        await self.last_sequence()

    async def last_sequence(self) -> int:
        js = self._js()
        try:
            info = await js.stream_info(self.stream)
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"the run log did not answer: {exc!r}") from exc
        return int(info.state.last_seq)

    async def first_sequence(self) -> int:
        js = self._js()
        try:
            info = await js.stream_info(self.stream)
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"the run log did not answer: {exc!r}") from exc
        if not info.state.messages:
            return int(info.state.last_seq) + 1
        return int(info.state.first_seq)

    async def subscribe(self, durable: Durable) -> LogSubscription:
        config = ConsumerConfig(
            durable_name=durable.name,
            deliver_policy=DeliverPolicy.ALL,
            ack_policy=AckPolicy.EXPLICIT,
            backoff=list(durable.backoff_s),
            max_deliver=durable.max_deliver,
            max_ack_pending=durable.max_ack_pending,
            filter_subject=f"{self.subject_prefix}.>",
        )
        # An existing consumer keeps the settings it was created with.
        sub = JetStreamSubscription(self._js(), f"{self.subject_prefix}.>", self.stream, config)
        await sub.open()
        return sub

    async def read_from(self, sequence: int) -> LogSubscription:
        config = ConsumerConfig(
            name=f"rankd-replay-{uuid.uuid4().hex[:12]}",
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=max(1, sequence),
            ack_policy=AckPolicy.EXPLICIT,
            inactive_threshold=60.0,  # the server removes it a minute after we stop
        )
        sub = JetStreamSubscription(self._js(), f"{self.subject_prefix}.>", self.stream, config)
        await sub.open()
        return sub

    async def state(self) -> LogState:
        js = self._js()
        try:
            stream = await js.stream_info(self.stream)
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"the run log did not answer: {exc!r}") from exc
        info = stream.state
        last = int(info.last_seq or 0)
        first = int(info.first_seq or 0) if info.messages else last + 1
        created = str(stream.created or "")
        return LogState(first, last, int(info.messages or 0), int(info.bytes or 0), created)

    async def received_at(self, sequence: int) -> tuple[int, int] | None:
        js = self._js()
        subject = f"{self.subject_prefix}.>"
        try:
            found = await js.get_msg(self.stream, sequence, subject=subject, next=True)
        except NotFoundError:
            return None
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"the run log did not answer: {exc!r}") from exc
        return int(found.seq or sequence), time_ms(found.time)

    async def purge_before(self, sequence: int) -> None:
        js = self._js()
        try:
            await js.purge_stream(self.stream, seq=sequence)
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"cannot trim the run log: {exc!r}") from exc

    async def erase(self, sequence: int) -> None:
        js = self._js()
        try:
            # JetStream's message delete overwrites the stored message with random bytes
            # unless asked not to (no_erase), on every replica of the stream
            await js.delete_msg(self.stream, sequence)
        except (NotFoundError, BadRequestError):  # gone already (deleted, or never there)
            return
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"cannot erase log message {sequence}: {exc!r}") from exc

    async def lag(self, durable: str) -> LogLag:
        js = self._js()
        try:
            # before the consumer's state: what the log held by then must be counted
            state = (await js.stream_info(self.stream)).state
            last = int(state.last_seq or 0)
            try:
                try:
                    info = await js.consumer_info(self.stream, durable)
                except (TimeoutError, ServiceUnavailableError, nats.errors.NoRespondersError):
                    # a replicated stream's consumer is briefly leaderless after a node
                    # joins or leaves (a JetStream cluster's first seconds): ask once more
                    await asyncio.sleep(0.2)
                    info = await js.consumer_info(self.stream, durable)
            except NotFoundError:
                # never created: nothing consumed yet, so every message in the stream waits
                pending, ack_pending = int(state.messages or 0), 0
                floor = delivered = max(0, int(state.first_seq or 1) - 1)
            else:
                pending = int(info.num_pending or 0)
                ack_pending = int(info.num_ack_pending or 0)
                floor = int(info.ack_floor.stream_seq if info.ack_floor else 0)
                delivered = int(info.delivered.stream_seq if info.delivered else floor)
            oldest: bytes | None = None
            since = unapplied_from(pending, ack_pending, floor, delivered, last)
            if since is not None:
                subject = f"{self.subject_prefix}.>"
                with contextlib.suppress(NotFoundError):  # none at or after it (erased: skipped)
                    found = await js.get_msg(self.stream, since, subject=subject, next=True)
                    oldest = found.data or None
        except (nats.errors.Error, OSError) as exc:
            raise LogUnavailable(f"cannot read the log consumer's state: {exc!r}") from exc
        caught_up = not (pending or ack_pending) and oldest is None
        return LogLag(pending, ack_pending, floor, oldest, caught_up)
