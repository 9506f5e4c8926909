"""A live stream whose sends time out is counted as dropped and releases its slot, whether
the timeout comes alone or beside the heartbeat's in one exception group (sse-starlette
runs the event and ping senders in one task group). The response's parent is a stand-in
that raises: this checks the catching, not the streaming (tests/integration/api/test_live.py
drops a real stalled client)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import SendTimeoutError

from rankd import metrics
from rankd.api.routes_live import LiveResponse


async def no_events() -> AsyncIterator[ServerSentEvent]:
    return
    yield  # an async generator that yields nothing


@pytest.mark.parametrize(
    "raised",
    [
        SendTimeoutError(),
        BaseExceptionGroup("senders", [SendTimeoutError(), SendTimeoutError()]),
    ],
    ids=["alone", "with-the-heartbeat"],
)
async def test_a_send_timeout_is_a_counted_drop(
    raised: BaseException, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def timing_out(self: Any, scope: Any, receive: Any, send: Any) -> None:
        raise raised

    monkeypatch.setattr(EventSourceResponse, "__call__", timing_out)
    released: list[bool] = []
    response = LiveResponse(no_events(), lambda: released.append(True))
    before = metrics.LIVE_DROPPED._value.get()
    await response({"type": "http"}, None, None)  # type: ignore[arg-type]
    assert metrics.LIVE_DROPPED._value.get() == before + 1
    assert released == [True]


async def test_another_error_still_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing(self: Any, scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("not a timeout")

    monkeypatch.setattr(EventSourceResponse, "__call__", failing)
    released: list[bool] = []
    response = LiveResponse(no_events(), lambda: released.append(True))
    before = metrics.LIVE_DROPPED._value.get()
    with pytest.raises(RuntimeError):
        await response({"type": "http"}, None, None)  # type: ignore[arg-type]
    assert metrics.LIVE_DROPPED._value.get() == before
    assert released == [True]
