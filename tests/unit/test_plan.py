"""plan.py without servers: what a run does in each window (ranked, closed, expired), which
operation applies it, and the standing a script's reply becomes."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields, replace
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankd.boards import BoardConfig
from rankd.formats import format_time
from rankd.periods import DAY_MS, period_at
from rankd.plan import Target, Visibility, expires_at_ms, plan, standing, sum_horizon_ms
from rankd.runs import Run

HOUR_MS = 3_600_000


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def board(**config: object) -> BoardConfig:
    return BoardConfig("plan-test", **config)  # type: ignore[arg-type]


def by_window(targets: list[Target]) -> dict[str, Target]:
    return {t.window: t for t in targets}


def test_a_fresh_run_applies_in_every_window_with_its_period() -> None:
    b = board(windows=("all-time", "daily", "weekly", "monthly"))
    now = ms("2026-11-03T18:22:07.123")
    targets = by_window(plan(b, Run("r", "p", 7, now, now)))
    assert {w: t.disposition for w, t in targets.items()} == dict.fromkeys(b.windows, "apply")
    assert targets["daily"].period.id == "2026-11-03"
    assert targets["weekly"].period.id == "2026-W45"
    assert targets["monthly"].period.id == "2026-11"
    assert targets["all-time"].period.id == "all-time"
    for t in targets.values():
        assert t.operation == "best"
        assert t.composite == b.codecs[t.window].pack(7, now - t.period.start_ms)


def test_a_run_after_grace_is_closed_and_writes_nothing() -> None:
    b = board(windows=("all-time", "daily"), grace_seconds=600)
    ended = ms("2026-11-03T23:59:00")
    inside = by_window(plan(b, Run("r", "p", 1, ended, ms("2026-11-04T00:09:59"))))
    after = by_window(plan(b, Run("r", "p", 1, ended, ms("2026-11-04T00:10:00"))))
    assert inside["daily"].disposition == "apply"
    assert after["daily"].disposition == "closed"
    assert after["all-time"].disposition == "apply"  # all-time never closes


def test_a_rolling_run_counts_while_its_day_is_one_of_the_last_seven() -> None:
    b = board(windows=("all-time", "rolling-7d"), grace_seconds=86_400)
    received = ms("2026-11-10T00:00:30")
    for ended, counted in [
        (ms("2026-11-04T00:00:00"), True),  # the oldest of the seven days (4th..10th)
        (ms("2026-11-03T23:59:59.999"), False),  # the day before: gone, whatever the grace
        (ms("2026-11-10T00:00:00"), True),
    ]:
        target = by_window(plan(b, Run("r", "p", 5, ended, received)))["rolling-7d"]
        assert target.disposition == ("apply" if counted else "closed"), ended
        assert target.period.id == "current"
        if counted:  # composites count from the epoch, so entries of different days compare
            assert target.composite == b.codecs["rolling-7d"].pack(
                5, ended - target.period.start_ms
            )
    # a replay decides by when the run came, not when it is applied
    late = by_window(
        plan(b, Run("r", "p", 5, ms("2026-11-04T12:00:00"), received), received + 9 * DAY_MS)
    )
    assert late["rolling-7d"].disposition == "apply"
    assert expires_at_ms(b, late["rolling-7d"].period) is None  # never leaves Redis


def test_expiry_follows_retention_and_grace() -> None:
    b = board(windows=("daily",), grace_seconds=60, retention_days={"daily": 2})
    ended = ms("2026-11-03T12:00:00")
    period = period_at("daily", ended)
    expires = expires_at_ms(b, period)
    assert expires == ms("2026-11-04T00:00:00") + 60_000 + 2 * DAY_MS
    [target] = plan(b, Run("r", "p", 1, ended, ended))
    assert target.disposition == "apply"  # no TTL: the season job removes the keys later
    # a replay after the key has left Redis: only the durable copy takes the run
    [late] = plan(b, Run("r", "p", 1, ended, ended), now_ms=expires)
    assert late.disposition == "expired" and late.composite is not None
    assert expires_at_ms(b, period_at("all-time", ended)) is None


def test_sum_boards_add_with_a_time_key_and_trim_only_all_time() -> None:
    b = board(windows=("all-time", "daily"), policy="sum", grace_seconds=0)
    now = ms("2026-11-03T10:00:00")
    targets = by_window(plan(b, Run("r", "p", 5, now - HOUR_MS, now)))
    for t in targets.values():
        assert t.operation == "sum" and t.composite is None and t.applies
        offset = now - HOUR_MS - t.period.start_ms
        assert t.time_key == b.codecs[t.window].time_key(offset)
    # counted ids are kept four horizons (see plan.counted_ids_kept_since)
    assert targets["all-time"].trim_before_ms == now - 4 * sum_horizon_ms(b)
    assert targets["daily"].trim_before_ms == 0


def test_a_sum_run_older_than_the_horizon_is_late_on_all_time_never_closed() -> None:
    b = board(windows=("all-time",), policy="sum", grace_seconds=0)
    now = ms("2026-11-03T10:00:00")
    [old] = plan(b, Run("r", "p", 5, now - sum_horizon_ms(b) - 1, now))
    assert old.disposition == "late" and not old.sendable  # PostgreSQL decides first
    assert replace(old, counted_ms=now).sendable  # targets are immutable
    [years] = plan(b, Run("r", "p", 5, ms("2020-01-02T00:00:00"), now))
    assert years.disposition == "late"


def test_standing_from_a_reply_and_for_closed_targets() -> None:
    b = board(windows=("daily",))
    now = ms("2026-11-03T18:22:07.123")
    [target] = plan(b, Run("r", "p", 9, now, now))
    assert target.composite is not None
    reply = (1, 4, target.composite, 1, now, 6, target.composite - 1, now - 5)
    # achieved_at is the exact time the script reports, not the tie bucket's start
    achieved = format_time(now)
    assert standing(b, target, reply) == {
        "window": "daily",
        "period": "2026-11-03",
        "segment": None,
        "status": "ranked",
        "rank": 4,
        "previous_rank": 6,
        "score": 9,
        "achieved_at": achieved,
        "improved": True,
        "is_best": True,
    }
    closed = {"window": "daily", "period": "2026-11-03", "segment": None, "status": "closed"}
    assert standing(b, target, None) == {**closed, "improved": False, "is_best": False}
    # rank 0: a replayed run too old to count, for a player without an entry
    assert standing(b, target, (0, 0, 0, 0, 0, 0, 0, 0))["status"] == "closed"
    # no entry before this run: previous_rank null
    first = (1, 4, target.composite, 1, now, 0, 0, 0)
    assert standing(b, target, first)["previous_rank"] is None
    # an entry written before exact times were kept: its tie bucket's start
    resolution = b.codecs["daily"].resolution_ms
    bucket = format_time(now - (now - target.period.start_ms) % resolution)
    old = (0, 4, target.composite, 1, 0, 4, target.composite, 0)
    assert standing(b, target, old)["achieved_at"] == bucket


@given(
    st.integers(min_value=ms("2020-01-01T00:00:00"), max_value=ms("2099-12-31T00:00:00")),
    st.integers(min_value=0, max_value=3 * DAY_MS),
    st.sampled_from(["best", "sum"]),
)
def test_every_window_gets_exactly_one_target_in_the_period_of_ended_at(
    ended: int, delay: int, policy: str
) -> None:
    b = board(windows=("all-time", "daily", "weekly", "monthly"), policy=policy)
    targets = plan(b, Run("r", "p", 3, ended, ended + delay))
    assert [t.window for t in targets] == list(b.windows)
    for t in targets:
        assert t.period.start_ms <= ended < t.period.end_ms
        if t.disposition != "closed":
            assert (t.composite is not None) == (policy == "best")
        else:
            assert t.window != "all-time" or policy == "sum"


def test_moderation_is_an_input_banned_players_go_to_shadow_held_windows_to_pending() -> None:
    b = board(windows=("all-time", "daily"), segments=("country",))
    now = ms("2026-11-03T10:00:00")
    run = Run("r", "p", 5, now, now, segments=(("country", "FR"),), held=("daily",))
    sides = {(t.window, t.segment): t.side for t in plan(b, run)}
    assert sides == {
        ("all-time", ""): "public",
        ("daily", ""): "pending",
        ("all-time", "country:FR"): "public",
        ("daily", "country:FR"): "pending",
    }
    banned = plan(b, run, seen=Visibility(frozenset({"p"})), mark=True)
    # a banned player's runs are hidden on :shadow, but a window the run was held in
    # before the ban still waits on :pending; every target is marked
    assert {(t.window, t.segment): t.side for t in banned} == {
        ("all-time", ""): "shadow",
        ("daily", ""): "pending",
        ("all-time", "country:FR"): "shadow",
        ("daily", "country:FR"): "pending",
    }
    assert all(t.mark for t in banned)
    old = Run("o", "p", 5, now - 400 * DAY_MS, now)  # closed in daily, all-time applies
    assert {t.side for t in plan(b, old, seen=Visibility(frozenset({"p"})))} == {"shadow"}


def test_targets_are_immutable_and_planned_with_every_field() -> None:
    b = board(windows=("all-time", "daily"), policy="sum", segments=("country",))
    now = ms("2026-11-03T10:00:00")
    run = Run("r", "p", 1, now - 400 * DAY_MS, now, segments=(("country", "FR"),))
    targets = plan(b, run)
    assert {t.disposition for t in targets} == {"late", "closed"}
    for target in targets:
        assert list(vars(target)) == [f.name for f in fields(Target)]
        assert Target(**vars(target)) == target
        with pytest.raises(FrozenInstanceError):
            target.side = "shadow"  # type: ignore[misc]
