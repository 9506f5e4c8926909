"""One line a second per kind of failure (rankd/logs.py Repeats): an outage failing hundreds
of requests a second writes one warning a second, saying how many it stands for."""

from __future__ import annotations

from rankd.logs import Repeats


def test_one_line_per_kind_per_interval_with_the_count_held_back() -> None:
    now = [0.0]
    repeats = Repeats(every_s=1.0, clock=lambda: now[0])
    assert repeats.allow("redis down") == 0
    for _ in range(449):
        now[0] += 0.002
        assert repeats.allow("redis down") is None
    assert repeats.allow("pg down") == 0  # another kind is not held back by it
    now[0] = 1.0
    assert repeats.allow("redis down") == 449
    assert repeats.allow("redis down") is None
    now[0] = 5.0
    assert repeats.allow("redis down") == 1


def test_kinds_are_bounded() -> None:
    repeats = Repeats(every_s=60.0, max_kinds=3, clock=lambda: 0.0)
    for kind in ("a", "b", "c", "d"):
        assert repeats.allow(kind) == 0
    assert len(repeats._kinds) == 3
    assert repeats.allow("a") == 0  # forgotten first, so let through again
    assert repeats.allow("d") is None
