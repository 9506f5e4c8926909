"""The run log's message format (runs.py) and a run's metadata check (validation.py): every
run survives its encoding, metadata byte for byte; readers refuse what they cannot read."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankd.errors import InvalidRequest
from rankd.runs import REFUSALS, Run, decode_batch, encode_message
from rankd.validation import METADATA_MAX_BYTES, METADATA_MAX_KEYS, check_metadata

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
metadata = st.dictionaries(st.text(max_size=10), json_value, max_size=METADATA_MAX_KEYS)

runs = st.builds(
    Run,
    run_id=st.from_regex(r"[A-Za-z0-9_.:-]{1,20}", fullmatch=True),
    player_id=st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
    score=st.integers(min_value=0, max_value=2**53),
    ended_at_ms=st.integers(min_value=0, max_value=2**42),
    received_at_ms=st.integers(min_value=0, max_value=2**42),
    segments=st.lists(
        st.tuples(st.sampled_from(["country", "platform"]), st.sampled_from(["FR", "ios"])),
        max_size=2,
        unique_by=lambda s: s[0],
    ).map(tuple),
    held=st.lists(st.sampled_from(["daily", "weekly", "all-time"]), unique=True).map(tuple),
    metadata=st.one_of(st.just(""), metadata.map(lambda m: orjson.dumps(m).decode())),
    refused=st.sampled_from(["", *REFUSALS]),
    league=st.one_of(
        st.sampled_from(["", "wait:1", "wait:999999999"]),
        st.builds(lambda t, o: f"{t}:{o}", st.integers(0, 15), st.integers(0, 999_999_999)),
    ),
)


@given(st.lists(runs, min_size=1, max_size=5), st.integers(min_value=0, max_value=9))
def test_every_run_survives_the_log(batch: list[Run], generation: int) -> None:
    board, seen_generation, decoded = decode_batch(encode_message("b1", batch, generation))
    assert (board, seen_generation) == ("b1", generation)
    for sent, got in zip(batch, decoded, strict=True):
        assert got.metadata == sent.metadata  # the very bytes, not an equal object
        assert got == sent


def test_a_run_without_metadata_or_holds_keeps_its_older_shape() -> None:
    plain = Run("r1", "p1", 5, 1000, 1001)
    [fields] = orjson.loads(encode_message("b1", [plain]))["runs"]
    assert len(fields) == 6  # readers from before holds and metadata read it
    with_meta = Run("r1", "p1", 5, 1000, 1001, metadata='{"a":1}')
    [fields] = orjson.loads(encode_message("b1", [with_meta]))["runs"]
    assert fields[6:] == [[], {"a": 1}]


def _with_tail(tail: list[Any]) -> bytes:
    run = ["r", "p", 1, 2, 3, {}, [], None, *tail]
    return orjson.dumps({"v": 2, "board": "b", "runs": [run]})


@pytest.mark.parametrize(
    "tail",
    [["", "16:0"], ["", "0:1000000000"], ["", "0:01"], ["", "wait"], ["", "wait:1\n"], ["", 3]],
)
def test_a_malformed_league_placement_is_refused(tail: list[Any]) -> None:
    """A placement the log cannot trust parks the message rather than placing anyone."""
    assert decode_batch(_with_tail(["", "7:1"]))[2][0].league == "7:1"
    with pytest.raises(ValueError, match=r"placement|refusal"):
        decode_batch(_with_tail(tail))


@pytest.mark.parametrize("bad", [["x"], "x", {"a": 1}.keys()])
def test_metadata_that_is_not_an_object_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidRequest):
        check_metadata(bad)


@given(metadata)
def test_metadata_within_bounds_is_kept_compact_and_whole(value: dict[str, Any]) -> None:
    encoded = orjson.dumps(value)
    if len(encoded) > METADATA_MAX_BYTES:
        with pytest.raises(InvalidRequest, match="bytes"):
            check_metadata(value)
        return
    assert check_metadata(value) == encoded.decode()


def test_the_bounds_are_exact() -> None:
    check_metadata({f"k{i}": 0 for i in range(METADATA_MAX_KEYS)})
    with pytest.raises(InvalidRequest, match="keys"):
        check_metadata({f"k{i}": 0 for i in range(METADATA_MAX_KEYS + 1)})
    room = METADATA_MAX_BYTES - len(b'{"a":""}')
    assert len(check_metadata({"a": "x" * room})) == METADATA_MAX_BYTES
    with pytest.raises(InvalidRequest, match="1025 bytes"):
        check_metadata({"a": "x" * (room + 1)})
