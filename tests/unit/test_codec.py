"""Property tests for the composite codec: order, round trip, range, errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankd.codec import COMPOSITE_LIMIT, MAX_SCORE_LIMIT, Codec, CodecError
from rankd.periods import SPAN_MS


@st.composite
def codecs(draw: st.DrawFn) -> Codec:
    max_score = draw(
        st.one_of(
            st.integers(1, 1000),
            st.integers(1, MAX_SCORE_LIMIT),
            st.sampled_from([1_000_000_000, MAX_SCORE_LIMIT, 2**40]),
        )
    )
    order = draw(st.sampled_from(["desc", "asc"]))
    span = draw(st.sampled_from(sorted(SPAN_MS.values())))
    return Codec.create(max_score, order, span)  # type: ignore[arg-type]


@st.composite
def codec_and_runs(draw: st.DrawFn, n: int = 2) -> tuple[Codec, list[tuple[int, int]]]:
    codec = draw(codecs())
    runs = [
        (draw(st.integers(0, codec.max_score)), draw(st.integers(0, codec.span_ms - 1)))
        for _ in range(n)
    ]
    return codec, runs


def better(codec: Codec, a: tuple[int, int], b: tuple[int, int]) -> int:
    """The rules written plainly: 1 if a ranks above b, -1 if below, 0 if tied."""
    (sa, ta), (sb, tb) = a, b
    if sa != sb:
        higher = sa > sb if codec.order == "desc" else sa < sb
        return 1 if higher else -1
    ua, ub = ta // codec.resolution_ms, tb // codec.resolution_ms
    return (ua < ub) - (ua > ub)


@given(codec_and_runs())
def test_order_matches_the_rules_for_every_pair(case: tuple[Codec, list[tuple[int, int]]]) -> None:
    codec, (a, b) = case
    ca, cb = codec.pack(*a), codec.pack(*b)
    assert (ca > cb) - (ca < cb) == better(codec, a, b)


@given(codec_and_runs(n=1))
def test_round_trip_is_exact_and_below_2_pow_53(case: tuple[Codec, list[tuple[int, int]]]) -> None:
    codec, [(score, offset)] = case
    composite = codec.pack(score, offset)
    assert 0 <= composite < COMPOSITE_LIMIT
    assert float(composite) == composite  # exact in a double
    decoded_score, decoded_offset = codec.unpack(composite)
    assert decoded_score == score
    assert decoded_offset == offset - offset % codec.resolution_ms


@given(codecs())
def test_extremes_stay_below_2_pow_53(codec: Codec) -> None:
    best = codec.pack(codec.max_score if codec.order == "desc" else 0, 0)
    assert best < COMPOSITE_LIMIT
    assert codec.pack(0 if codec.order == "desc" else codec.max_score, codec.span_ms - 1) >= 0


@given(codecs(), st.integers(1, 10**6))
def test_scores_past_max_score_are_refused(codec: Codec, extra: int) -> None:
    with pytest.raises(CodecError, match="above max_score"):
        codec.pack(codec.max_score + extra, 0)


def test_negative_scores_and_times_outside_the_period_are_refused() -> None:
    codec = Codec.create(1000, "desc", SPAN_MS["daily"])
    with pytest.raises(CodecError):
        codec.pack(-1, 0)
    with pytest.raises(CodecError):
        codec.pack(1, SPAN_MS["daily"])
    with pytest.raises(CodecError):
        codec.pack(1, -1)


@pytest.mark.parametrize("bad", [0, -5, 2**53])
def test_max_score_must_fit(bad: int) -> None:
    with pytest.raises(CodecError):
        Codec.create(bad, "desc", 1000)


def test_default_board_resolutions() -> None:
    # max_score 1e9 leaves 23 time bits: the composite's time units (the member's stamp
    # orders ties within one, so tie_resolution_ms is 1)
    res = {w: Codec.create(1_000_000_000, "desc", s).resolution_ms for w, s in SPAN_MS.items()}
    assert res == {
        "all-time": 376_196,
        "rolling-7d": 376_196,  # its days' entries compare, so its time counts like all-time's
        "daily": 11,
        "weekly": 73,
        "monthly": 320,
        "hourly": 1,
    }


def test_earlier_achiever_wins_at_equal_score() -> None:
    codec = Codec.create(1_000_000_000, "asc", SPAN_MS["weekly"])
    assert codec.pack(500, 1000) > codec.pack(500, 5000)
    assert codec.pack(400, 9000) > codec.pack(500, 0)  # asc: lower is better
