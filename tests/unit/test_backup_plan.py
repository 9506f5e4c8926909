"""What a restore does with the log it finds (services/backup.py plan_log), without servers."""

from __future__ import annotations

import pytest

from rankd.services.backup import FORMAT, BackupRefused, Manifest, plan_log
from rankd.stores.log_shapes import LogState

CREATED = "2026-12-01 10:00:00+00:00"


def manifest(applied_through: int = 100, log_last: int = 120) -> Manifest:
    return Manifest(FORMAT, "0", "2026-12-05T00:00:00Z", applied_through, log_last, CREATED, 1, "")


def state(first: int, last: int, messages: int, created: str = CREATED) -> LogState:
    return LogState(first, last, messages, 0, created)


def test_the_backups_own_log_replays_from_just_after_the_floor() -> None:
    plan = plan_log(manifest(), state(1, 500, 500))
    assert (plan.replay_from, plan.missing, plan.move_to) == (101, 0, None)


def test_a_log_trimmed_past_the_floor_says_how_much_is_missing() -> None:
    plan = plan_log(manifest(), state(131, 500, 370))
    assert (plan.replay_from, plan.missing, plan.move_to) == (101, 30, None)


def test_a_log_with_nothing_later_replays_nothing() -> None:
    plan = plan_log(manifest(applied_through=120), state(1, 120, 120))
    assert plan.replay_from is None and plan.missing == 0


def test_an_empty_new_log_moves_past_the_backups_last_sequence() -> None:
    plan = plan_log(manifest(), state(1, 0, 0, created="2026-12-05 11:00:00+00:00"))
    assert (plan.replay_from, plan.missing, plan.move_to) == (None, 0, 121)


def test_the_backups_own_log_emptied_by_retention_misses_everything_later() -> None:
    plan = plan_log(manifest(), state(501, 500, 0))
    assert (plan.replay_from, plan.missing, plan.move_to) == (None, 400, None)


def test_a_log_of_another_history_is_refused() -> None:
    with pytest.raises(BackupRefused, match="another history"):
        plan_log(manifest(), state(1, 50, 50, created="2026-11-01 00:00:00+00:00"))
