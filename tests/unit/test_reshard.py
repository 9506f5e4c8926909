"""A resharding's pure parts: layouts' key names never meet, the move's state round-trips
through its stored JSON, and the old layout's keys are told from everything else."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rankd.placement import Layout, base_of, next_base, shard_name, shard_of
from rankd.reshard import (
    BUCKET_KEY_BYTES,
    ENTRY_BYTES,
    FIELD_BYTES,
    PHASES,
    Footprint,
    Reshard,
    no_room,
)
from rankd.services.resharding import in_layout
from rankd.stores.redis import keys

counts = st.integers(min_value=1, max_value=1024)


def names(layout: int) -> set[str]:
    return {pk.public for pk in keys.shard_keys("b", "daily", "2026-12-06", "", layout)}


@given(st.lists(counts, min_size=2, max_size=8))
def test_each_new_layout_is_named_apart_from_the_one_it_replaces(chain: list[int]) -> None:
    served = Layout(chain[0])
    for shards in chain[1:]:
        if shards == served:
            continue  # the same count is no move
        new = Layout(shards, next_base(served, shards))
        assert not names(served) & names(new), (served, new)
        assert len(names(new)) == shards
        served = new


@given(counts, st.integers(min_value=0, max_value=4096), st.text(min_size=1, max_size=20))
def test_a_players_shard_is_named_from_the_base(shards: int, base: int, player: str) -> None:
    layout = Layout(shards, base)
    k = shard_of(player, shards)
    assert shard_name(player, layout) == (-1 if shards == 1 else base_of(layout) + k)
    own = keys.own_keys("b", "daily", "2026-12-06", "", player, layout)
    assert own.public in names(layout)


def test_a_plain_count_names_as_before() -> None:
    assert names(16) == names(Layout(16, 0))
    assert names(1) == {"lb:{b:daily:2026-12-06}"}
    assert Layout(1, 7).base == 0  # an unsharded layout has no shard names


@given(
    st.sampled_from(PHASES),
    counts,
    st.integers(min_value=0, max_value=2048),
    st.integers(min_value=0, max_value=10**9),
    st.text(max_size=30),
)
def test_a_move_round_trips_through_its_stored_json(
    phase: str, shards: int, base: int, done: int, cursor: str
) -> None:
    move = Reshard(
        phase,  # type: ignore[arg-type]
        Layout(shards, base),
        1_700_000_000_000,
        done,
        done + 5,
        cursor,
        "r",
        done * 130,
    )
    back = Reshard.from_json(move.as_json())
    assert back == move and base_of(back.other) == base_of(move.other)
    assert back.writes_other == (phase in ("copy", "drain"))


def test_the_old_layouts_keys_are_told_from_the_rest() -> None:
    eight = range(16, 24)
    assert in_layout(b"lb:{b:daily:2026-12-06#17}:at:12", eight)
    assert not in_layout(b"lb:{b:daily:2026-12-06#3}", eight)
    assert not in_layout(b"lb:{b:daily:2026-12-06}", eight)
    # the unsharded layout: tags with no shard; never a league's keys or another name
    assert in_layout("lb:{b:daily:2026-12-06}:shadow", None)
    assert in_layout("lb:{b/country=FR:daily:2026-12-06}:at:7", None)
    assert not in_layout("lb:{b:league}:tiers:3", None)
    assert not in_layout("lb:{b:daily:2026-12-06#0}", None)
    assert not in_layout("lb:periods:{b}:daily", None)


def test_a_move_counts_entries_ids_hashes_and_fields() -> None:
    assert Footprint().bytes() == 0
    fp = Footprint(entries=1000, id_bytes=7000, bucket_keys=900, fields=10, field_bytes=500)
    assert fp.bytes() == (
        1000 * ENTRY_BYTES + 14_000 + 900 * BUCKET_KEY_BYTES + 10 * FIELD_BYTES + 500
    )


def test_a_move_fits_below_the_ratio_and_is_refused_past_it() -> None:
    mib = 1 << 20
    # one node of 1,000 MiB using 500: 290 MiB more stays under 80%, 310 would not
    assert no_room([(500 * mib, 1000 * mib)], [(290 * mib, 4)], 0.8) is None
    why = no_room([(500 * mib, 1000 * mib)], [(310 * mib, 4)], 0.8)
    assert why is not None and "310.0 MiB" in why and "500.0 of its 1000.0 MiB" in why
    # a Redis without maxmemory has no ratio to pass
    assert no_room([(500 * mib, 0)], [(10_000 * mib, 4)], 0.8) is None
    # another move still copying counts too
    assert no_room([(500 * mib, 1000 * mib)], [(200 * mib, 4), (200 * mib, 2)], 0.8)


def test_a_cluster_node_takes_its_share_of_the_shards_at_best() -> None:
    mib = 1 << 20
    nodes = [(500 * mib, 1000 * mib)] * 3
    # 6 shards on 3 nodes: a third each (200 of 600 MiB fits; 400 of 1,200 does not)
    assert no_room(nodes, [(600 * mib, 6)], 0.8) is None
    assert no_room(nodes, [(1200 * mib, 6)], 0.8) is not None
    # one shard lands on one node whole
    assert no_room(nodes, [(600 * mib, 1)], 0.8) is not None
    # 4 shards on 3 nodes: the fullest takes 2 of them (350 of 700 MiB)
    assert no_room(nodes, [(700 * mib, 4)], 0.8) is not None
    assert no_room(nodes, [(700 * mib, 4)], 1.0) is None


@given(
    st.lists(st.tuples(st.integers(0, 1 << 40), st.integers(0, 1 << 40)), min_size=1),
    st.integers(0, 1 << 40),
    counts,
    st.floats(0.01, 1.0),
)
def test_no_room_is_said_exactly_when_a_limited_node_would_pass_the_ratio(
    nodes: list[tuple[int, int]], need: int, shards: int, ratio: float
) -> None:
    share = need * -(-shards // len(nodes)) // shards
    over = any(limit and used + share > ratio * limit for used, limit in nodes)
    assert (no_room(nodes, [(need, shards)], ratio) is not None) == over
    # more need is never more room
    if over:
        assert no_room(nodes, [(need + 1, shards)], ratio) is not None
