"""A player stream's events from successive rank reads (services/player_streams.py), without
servers: standings on connect and on change, passed only for a listed friend who was behind,
a new period starting over, and a client that stops reading closed, not buffered for."""

from __future__ import annotations

from typing import Any

from rankd.services.player_streams import QUEUE_EVENTS, PlayerStream


def drain(stream: PlayerStream) -> list[tuple[str, dict[str, Any]] | None]:
    out = []
    while not stream.queue.empty():
        out.append(stream.queue.get_nowait())
    return out


def test_standings_and_passes() -> None:
    s = PlayerStream("me", ("arena",), ("pal", "ghost"))
    s.update("arena", "weekly", "W1", {"me": 1, "pal": 2})
    assert drain(s) == [
        ("standing", {"board_id": "arena", "window": "weekly", "period": "W1", "rank": 1,
                      "previous_rank": None}),
    ]  # fmt: skip
    s.update("arena", "weekly", "W1", {"me": 1, "pal": 2})
    assert drain(s) == []  # nothing changed
    s.update("arena", "weekly", "W1", {"x": 1, "me": 2, "pal": 3})
    assert [e[1]["rank"] for e in drain(s) if e] == [2]  # a stranger passed: no passed event
    s.update("arena", "weekly", "W1", {"pal": 1, "x": 2, "me": 3})
    events = drain(s)
    assert [e[0] for e in events if e] == ["standing", "passed"]
    assert events[1] == (
        "passed",
        {"board_id": "arena", "window": "weekly", "period": "W1", "player_id": "pal",
         "rank": 1, "your_rank": 3},
    )  # fmt: skip
    s.update("arena", "weekly", "W1", {"pal": 1, "x": 2, "me": 3})
    assert drain(s) == []  # still ahead: passed once


def test_a_friend_with_no_entry_then_ahead_passes() -> None:
    s = PlayerStream("me", ("b",), ("pal",))
    s.update("b", "all-time", "all-time", {"me": 1})
    drain(s)
    s.update("b", "all-time", "all-time", {"pal": 1, "me": 2})
    assert [e[0] for e in drain(s) if e] == ["standing", "passed"]


def test_a_new_period_starts_over_without_passes() -> None:
    s = PlayerStream("me", ("b",), ("pal",))
    s.update("b", "daily", "D1", {"me": 2, "pal": 5})
    drain(s)
    s.update("b", "daily", "D2", {"pal": 1, "me": 2})
    assert drain(s) == [
        ("standing", {"board_id": "b", "window": "daily", "period": "D2", "rank": 2,
                      "previous_rank": None}),
    ]  # fmt: skip


def test_no_entry_sends_nothing() -> None:
    s = PlayerStream("me", ("b",), ("pal",))
    s.update("b", "daily", "D1", {"pal": 1})
    assert drain(s) == []


def test_a_stream_that_is_not_read_is_closed_not_grown() -> None:
    s = PlayerStream("me", ("b",), ())
    for rank in range(1, QUEUE_EVENTS + 10):
        s.update("b", "all-time", "all-time", {"me": rank})
    assert s.closed
    assert s.queue.qsize() == QUEUE_EVENTS
    events = drain(s)
    assert events[-1] is None  # the end marker, after what was queued
