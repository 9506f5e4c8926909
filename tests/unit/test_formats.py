"""Ids and times are matched whole: no trailing newline, no look-alike digits, no ISO week
dates passing for RFC 3339."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankd.errors import InvalidRequest
from rankd.formats import format_time, is_board_id, is_player_id, is_run_id, parse_time

HOSTILE = ["\n", "\r", "\x00", " ", '"', "'", "{}", "*", ">", "é", "٣", "\t", "\\"]


@pytest.mark.parametrize("bad", HOSTILE)
def test_ids_refuse_hostile_characters_anywhere(bad: str) -> None:
    for check, ok in ((is_board_id, "arena"), (is_player_id, "p1"), (is_run_id, "r-1")):
        assert check(ok)
        assert not check(ok + bad), (check.__name__, bad)
        assert not check(bad + ok), (check.__name__, bad)
        assert not check(ok[:1] + bad + ok[1:]), (check.__name__, bad)


def test_ids_follow_the_contract_patterns() -> None:
    assert is_board_id("a..b") and is_board_id("x.") and not is_board_id(".x")
    assert not is_board_id("A") and not is_board_id("a" * 65) and is_board_id("a" * 64)
    assert is_player_id("A-z_9") and not is_player_id("") and not is_player_id("a.b")
    assert is_run_id("r:1.2-x_Y") and not is_run_id("r" * 129)
    assert not is_player_id(5) and not is_run_id(None)


@pytest.mark.parametrize(
    "bad",
    [
        "2026-W48-1T10:00:00Z",  # ISO week date
        "2026-11-03T18:22:07Z\n",
        "2026-11-03 18:22:07Z",
        "2026-11-03T18:22:07",  # no offset
        "2026-11-03",
        "2026-13-03T18:22:07Z",
        "2026-11-03T25:22:07Z",
        "\uff12\uff10\uff12\uff16-11-03T18:22:07Z",
        "20261103T182207Z",
    ],
)
def test_times_that_are_not_rfc3339_are_refused(bad: str) -> None:
    with pytest.raises(InvalidRequest):
        parse_time(bad, "ended_at")


def test_rfc3339_variants_parse_to_utc_ms() -> None:
    assert parse_time("2026-11-03T18:22:07.123Z", "t") == 1793730127123
    assert parse_time("2026-11-03t19:22:07.123+01:00", "t") == 1793730127123
    assert parse_time("2026-11-03T18:22:07z", "t") == 1793730127000


@given(st.integers(min_value=0, max_value=4_102_444_800_000))
def test_format_then_parse_is_the_identity(ms: int) -> None:
    assert parse_time(format_time(ms), "t") == ms
