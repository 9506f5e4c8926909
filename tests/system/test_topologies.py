"""The store-exercising suites on the cluster and Sentinel topologies, as on a single Redis.

Each topology runs a selection of the end-to-end suites (submits, reads, moderation,
segments, live notices, board deletion and erasure, a season pass) in a pytest of its own,
whose session servers are that topology's (conftest.py's RANKD_TEST_TOPOLOGY): six Redis
Cluster nodes, or a primary, a replica and three Sentinels; three clustered NATS servers
with the stream at three replicas. The selection and a share of the oracle keep each to about
two minutes on a quiet machine; the two run side by side.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SELECTION = [
    "tests/integration/services/test_submit.py",
    "tests/integration/api/test_api_reads.py",
    "tests/integration/services/test_segments.py",
    # change notices over pub/sub (not the rate test: its 80 ms gaps are timing, not stores)
    "tests/integration/api/test_live.py::test_a_stream_starts_with_the_top_list_and_follows_submits",
    "tests/integration/api/test_live.py::test_a_segment_stream_sees_its_segment_only",
    "tests/integration/services/test_moderation.py",
    "tests/integration/services/test_admin.py",  # board deletion: SCAN must reach every primary
    "tests/integration/api/test_limits_work.py::test_every_primarys_memory_is_read",
    # the consumer's lag read against the log's own last message (three NATS servers)
    "tests/integration/stores/test_runlog.py::test_the_consumer_is_never_reported_idle_short_of_a_logged_run",
    "tests/integration/services/test_seasons.py::test_an_injected_clock_freezes_across_day_week_month_and_year",
    # 500 messages of 1,000 runs of one board replayed: every command within what each
    # topology's Redis takes
    "tests/integration/services/test_replay.py::test_a_replay_of_a_long_log_of_one_board_stays_within_what_redis_takes",
    # v1.3: cursors and previous ranks ask every shard in one round (slots on every primary);
    # not the 10,050-entry deep page test, which costs the loaded CI machine most
    "tests/integration/api/test_cursors.py::test_entries_that_stay_put_are_neither_repeated_nor_skipped",
    "tests/integration/api/test_cursors.py::test_a_tampered_or_foreign_cursor_is_400",
    "tests/integration/api/test_previous_rank.py",
    # v1.3, on 4 shards (their keys on several primaries): entry metadata (the :meta hashes
    # beside every shard's key) through a rebuild and a replay; the caps race and attempts
    # (admission keys on slots of their own); the latest policy; a day leaving the rolling
    # window (a period rebuilt on every primary); a league (its keys in a slot of their own,
    # the standings on every primary); one webhook delivery
    "tests/integration/services/test_entry_metadata.py::"
    "test_metadata_survives_a_rebuild_a_replay_and_a_lost_redis[shards4]",
    "tests/integration/services/test_entry_metadata.py::"
    "test_every_read_that_asks_gets_the_metadata_of_the_run_holding_the_entry[shards4]",
    "tests/integration/services/test_scheduled.py::"
    "test_a_capped_occurrence_takes_exactly_its_entrants_under_a_race[shards4]",
    "tests/integration/services/test_scheduled.py::"
    "test_attempts_and_entrants_are_capped_and_survive_a_rebuild[shards4]",
    "tests/integration/services/test_scheduled.py::"
    "test_runs_count_in_the_occurrence_they_ended_in[shards4]",
    "tests/integration/services/test_latest_policy.py::"
    "test_the_latest_run_holds_the_entry_whatever_the_order[shards4]",
    "tests/integration/services/test_rolling_window.py::"
    "test_days_leave_the_rolling_window_in_every_store[shards4]",
    "tests/integration/services/test_leagues.py::"
    "test_a_league_places_ranks_and_moves_players_against_a_model[shards4]",
    "tests/integration/services/test_webhooks.py::"
    "test_a_frozen_period_is_announced_once_signed_and_retried_until_a_2xx",
    # v1.3: a live move from one key to 4 shards (built on every primary, the old key's
    # removal a SCAN of each), every read checked against a model throughout
    "tests/integration/services/test_resharding.py::"
    "test_reads_stay_exact_while_a_board_is_resharded_under_writes[1-4]",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(700),
    pytest.mark.skipif(
        os.environ.get("RANKD_TEST_TOPOLOGY", "single") != "single",
        reason="already running on a topology",
    ),
]


# The oracle too, in the same pytest as the selection (one set of servers to start), on
# shard counts of its own: on the cluster 16, which puts several of a board's shards on each
# of the three primaries (the merged reads, the fan-out of exact ranks, the per-node bulk
# loads of a rebuild); on Sentinel 3, which the single Redis's run (1 and 16) leaves out.
ORACLE = ["tests/integration/api/test_oracle.py"]
ORACLE_SHARDS = {"cluster": "16", "sentinel": "3"}


TOPOLOGIES = ["cluster", "sentinel"]


@dataclass
class Done:
    returncode: int | None
    out: str
    err: str


async def run_on(topology: str, selection: list[str]) -> Done:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKD_TEST_")}
    env["RANKD_TEST_TOPOLOGY"] = topology
    env["RANKD_TEST_ORACLE_SHARDS"] = ORACLE_SHARDS[topology]
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *selection),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(worker.communicate(), 660)
    finally:
        if worker.returncode is None:  # timed out, or the module stopped early
            worker.kill()
            await worker.wait()
    return Done(worker.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


@pytest.fixture(scope="module")
async def runs() -> AsyncIterator[dict[str, asyncio.Task[Done]]]:
    """Both topologies' pytests, started together: each has its own servers, data dir and
    ports, and one after the other they kept the 2-core machine about 60% busy (236 s of CPU
    in 387 s), so side by side they take about as long as the longer one."""
    tasks = {
        topology: asyncio.create_task(run_on(topology, SELECTION + ORACLE))
        for topology in TOPOLOGIES
    }
    try:
        yield tasks
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)


@pytest.mark.parametrize("topology", TOPOLOGIES)
async def test_the_store_suites_pass_on(runs: dict[str, asyncio.Task[Done]], topology: str) -> None:
    done = await runs[topology]
    lines = done.out.splitlines()
    # the failure and the summary, past the slowest-tests list
    tail = "\n".join(lines[-70:])
    print(f"\n[{topology}] {lines[-1] if lines else done.err}")
    assert done.returncode == 0, f"{topology}:\n{tail}\n{done.err[-2000:]}"
