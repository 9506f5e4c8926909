"""The league rules (rankd/leagues.py): zones and moves obey the contract's laws for any
cohort, and the league field is checked whole."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankd.errors import InvalidRequest
from rankd.leagues import League, parse_league

leagues = st.integers(5, 1000).flatmap(
    lambda size: st.builds(
        League,
        window=st.just("weekly"),
        tiers=st.integers(1, 16).map(lambda n: tuple(f"t{i}" for i in range(n))),
        cohort_size=st.just(size),
        promote=st.integers(0, size // 2),
        relegate=st.integers(0, size // 2),
    )
)


@given(leagues, st.data())
def test_zones_obey_the_laws(league: League, data: st.DataObject) -> None:
    tier = data.draw(st.integers(0, league.last_tier))
    ranked = data.draw(st.integers(0, league.cohort_size))
    zones = [league.zone(tier, rank, ranked) for rank in range(1, ranked + 1)]
    ups, downs = zones.count("promote"), zones.count("relegate")
    # promotion first: the top min(promote, n), none from the last tier
    assert ups == (0 if tier == league.last_tier else min(league.promote, ranked))
    assert zones[:ups] == ["promote"] * ups
    # relegation among the rest: the bottom ones, none from the first tier
    assert downs == (0 if tier == 0 else min(league.relegate, ranked - ups))
    assert zones[ranked - downs :] == ["relegate"] * downs
    assert all(z == "stay" for z in zones[ups : ranked - downs])
    moved = [league.moved(tier, rank, ranked) for rank in range(1, ranked + 1)]
    assert moved == [{"promote": "up", "relegate": "down", "stay": "stay"}[z] for z in zones]
    assert league.moved(tier, None, ranked) == "stay"  # no ranked entry: the tier is kept


@given(leagues, st.integers(0, 15), st.integers(0, 10**6))
def test_cohort_ids_name_one_cohort(league: League, tier: int, cohort: int) -> None:
    tier = min(tier, league.last_tier)
    assert league.parse_cohort_id(league.cohort_id(tier, cohort)) == (tier, cohort)


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        {"window": "weekly"},
        {"window": "weekly", "tiers": "gold"},
        {"window": "weekly", "tiers": ["gold\n"]},
        {"window": "weekly", "tiers": ["a", "b"], "promote": True},
        {"window": "weekly", "tiers": ["a"], "cohort_size": 1001},
        {"window": "weekly ", "tiers": ["a"]},
        {"window": "all-time", "tiers": ["a"]},
        {"window": "weekly", "tiers": ["a"], "relegate": -1},
    ],
)
def test_a_bad_league_field_is_refused(value: Any) -> None:
    with pytest.raises(InvalidRequest):
        parse_league(value, ["weekly", "all-time"])


def test_defaults_fit_any_cohort_size() -> None:
    assert parse_league({"window": "daily", "tiers": ["a"]}, ["daily"]) == League("daily", ("a",))
    small = parse_league({"window": "daily", "tiers": ["a"], "cohort_size": 6}, ["daily"])
    assert (small.promote, small.relegate) == (3, 3)
    with pytest.raises(InvalidRequest, match="windows"):
        parse_league({"window": "daily", "tiers": ["a"]}, ["daily", "weekly"])
    hourly = {"window": "hourly", "tiers": ["a"]}
    assert parse_league(hourly, ["hourly"], 398 * 3600).window == "hourly"
    with pytest.raises(InvalidRequest, match="grace_seconds up to 1432800"):
        parse_league(hourly, ["hourly"], 398 * 3600 + 1)
