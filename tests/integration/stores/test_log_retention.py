"""The run log's retention (services/log_retention.py) on a real JetStream stream of its own:
messages older than the age or past the size are trimmed, but never one the durable consumer
has not acknowledged (applied to PostgreSQL), however old; erased gaps are crossed."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest

from rankd.retention import Retention, parse_retention
from rankd.runtime import Runtime
from rankd.services.log_retention import LogRetention
from rankd.stores.runlog import Durable, JetStreamLog, LogMessage, LogSubscription
from tests.support.common import Urls

DURABLE_NAME = "applier"


@pytest.fixture
async def log(urls: Urls) -> AsyncIterator[JetStreamLog]:
    tag = uuid.uuid4().hex[:10]
    stream = JetStreamLog(urls.nats, stream=f"RET_{tag}", subject_prefix=f"ret{tag}", timeout_s=5)
    await stream.open()
    try:
        yield stream
    finally:
        if stream.js is not None:
            await stream.js.delete_stream(stream.stream)
        await stream.close()


async def publish(log: JetStreamLog, count: int, size: int = 100) -> list[int]:
    return [await log.publish("board", b"x" * size, f"m-{uuid.uuid4().hex}") for _ in range(count)]


async def consume(log: JetStreamLog) -> Applier:
    durable = Durable(DURABLE_NAME, backoff_s=[30.0], max_deliver=5, max_ack_pending=1000)
    return Applier(await log.subscribe(durable))


class Applier:
    """Takes every message the consumer delivers; acks (applies) them up to a sequence."""

    def __init__(self, sub: LogSubscription) -> None:
        self.sub = sub
        self.held: list[LogMessage] = []

    async def ack_through(self, last: int) -> None:
        while not self.held or max(m.seq for m in self.held) < last:
            messages = await self.sub.fetch(100, timeout_s=1.0)
            assert messages, "ran out of messages before the last to ack"
            self.held += messages
        await self.sub.ack([m for m in self.held if m.seq <= last])
        self.held = [m for m in self.held if m.seq > last]


async def test_old_messages_go_only_once_applied(log: JetStreamLog) -> None:
    old = await publish(log, 20)
    await asyncio.sleep(1.2)
    new = await publish(log, 5)
    now = int(time.time() * 1000)  # the clock stops here: however slow the steps below,
    sub = await consume(log)  # the new messages stay younger than the age
    retention = LogRetention(
        log, DURABLE_NAME, Retention(max_age_s=1, max_bytes=None), clock_ms=lambda: now
    )
    # nothing applied: nothing may go, however old
    trim = await retention.trim()
    assert (trim.purged, trim.wanted) == (0, new[0])
    assert (await log.state()).first == old[0]
    # half applied: the applied half goes
    await sub.ack_through(old[9])
    trim = await retention.trim()
    assert trim.purged == 10 and (await log.state()).first == old[10]
    # all applied: down to the first new message, which is younger than the age
    await sub.ack_through(new[-1])
    trim = await retention.trim()
    assert (await log.state()).first == new[0]
    assert (await retention.trim()).purged == 0  # again: nothing more
    await sub.sub.close()


async def test_the_size_cap_keeps_the_newest(log: JetStreamLog) -> None:
    seqs = await publish(log, 40, size=1000)
    sub = await consume(log)
    await sub.ack_through(seqs[-1])
    state = await log.state()
    cap = state.bytes // 4
    trim = await LogRetention(log, DURABLE_NAME, Retention(None, cap)).trim()
    after = await log.state()
    assert trim.purged > 0 and after.bytes <= cap
    assert after.last == seqs[-1]
    assert after.bytes > cap - 2 * (state.bytes // state.messages)  # no more than needed
    await sub.sub.close()


async def test_erased_messages_are_crossed(log: JetStreamLog) -> None:
    old = await publish(log, 10)
    await asyncio.sleep(1.2)
    new = await publish(log, 3)
    now = int(time.time() * 1000)  # the new messages stay younger than the age
    for seq in old[3:8]:  # an erasure's holes among the old
        await log.erase(seq)
    await log.erase(new[0])
    sub = await consume(log)
    await sub.ack_through(new[-1])
    trim = await LogRetention(log, DURABLE_NAME, Retention(1, None), clock_ms=lambda: now).trim()
    assert trim.wanted in (new[0], new[1])  # new[0] is gone: cutting before either is one
    assert (await log.state()).first == new[1]
    await sub.sub.close()


@pytest.mark.parametrize(
    ("text", "age", "size"),
    [
        ("7d", 7 * 86_400, None),
        ("36h", 36 * 3600, None),
        ("20gb", None, 20 << 30),
        ("7d,20GB", 7 * 86_400, 20 << 30),
        (" 500mb , 90m ", 5400, 500 << 20),
    ],
)
def test_retention_is_parsed(text: str, age: int | None, size: int | None) -> None:
    assert parse_retention(text) == Retention(age, size)


@pytest.mark.parametrize("text", ["", "7", "7 d", "0d", "7d,8d", "lots", "7d;20gb", "7d\n5", "-1h"])
def test_a_bad_retention_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="age and/or a size"):
        parse_retention(text)


def test_every_instance_trims_in_the_background(runtime: Runtime) -> None:
    names = [task.get_name() for task in runtime._tasks if not task.done()]
    assert "log-retention" in names
    assert runtime.settings.log_retention == "7d"  # the contract's default
