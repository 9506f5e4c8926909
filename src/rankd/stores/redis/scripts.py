"""The Lua scripts, loaded from their ``.lua`` files and run by SHA.

Scripts are sent with EVALSHA inside plain (non-transactional) pipelines, so a submit that
touches every window of a board costs one round trip. When Redis has lost its script cache
(restart, SCRIPT FLUSH, failover) the pipeline answers NOSCRIPT; we load the scripts and send
the whole pipeline again (retry_noscript, the one place for every way a script is sent).
That is safe because every script is idempotent: a max, or a sum keyed by run id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError

Call = tuple["Script", Sequence[str], Sequence[str | int]]


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: str
    sha: str

    @classmethod
    def load(cls, name: str) -> Script:
        """A script's file, after lib.lua (helpers shared by every script: Redis has no
        way to share code between scripts other than sending it with each)."""
        source = _read("lib") + "\n" + _read(name)
        return cls(name, source, hashlib.sha1(source.encode()).hexdigest())


def _read(name: str) -> str:
    return resources.files("rankd.lua").joinpath(f"{name}.lua").read_text("utf-8")


SUBMIT_BEST = Script.load("submit_best")
SUBMIT_BEST_MANY = Script.load("submit_best_many")
SUBMIT_SUM = Script.load("submit_sum")
SUBMIT_LATEST = Script.load("submit_latest")
ADMIT = Script.load("admit")
JOIN = Script.load("join")
ADMITTED = Script.load("admitted")
UNADMIT = Script.load("unadmit")
LEAGUE_PLACE = Script.load("league_place")
LEAGUE_PLACED = Script.load("league_placed")
LEAGUE_ADVANCE = Script.load("league_advance")
LEAGUE_COHORT = Script.load("league_cohort")
LEAGUE_READ = Script.load("league_read")
# values a submit script answers per run (submit_best.lua): changed, rank, stored, mine or
# counted, achieved, and the previous entry's rank, composite and time
SUBMIT_REPLY_WIDTH = 8
AROUND = Script.load("around")
TOP = Script.load("top")
RUN_IDS = Script.load("run_ids")
SEGMENT_VALUES = Script.load("segment_values")
FRIENDS = Script.load("friends")
MOVE_ENTRIES = Script.load("move_entries")
OWN_ENTRY = Script.load("own_entry")
ENTRY = Script.load("entry")
RATE_LIMIT = Script.load("rate_limit")
SET_ENTRY = Script.load("set_entry")
LOAD_PERIOD = Script.load("load_period")
LOG_POSITION = Script.load("log_position")
RESTORED_FROM = Script.load("restored_from")
AHEAD = Script.load("ahead")
HIST_REBUILD = Script.load("hist_rebuild")
HIST_CHECK = Script.load("hist_check")
ALL_SCRIPTS = (
    SUBMIT_BEST,
    SUBMIT_BEST_MANY,
    SUBMIT_SUM,
    SUBMIT_LATEST,
    ADMIT,
    JOIN,
    ADMITTED,
    UNADMIT,
    LEAGUE_PLACE,
    LEAGUE_PLACED,
    LEAGUE_ADVANCE,
    LEAGUE_COHORT,
    LEAGUE_READ,
    AROUND,
    TOP,
    FRIENDS,
    RUN_IDS,
    SEGMENT_VALUES,
    MOVE_ENTRIES,
    OWN_ENTRY,
    ENTRY,
    RATE_LIMIT,
    SET_ENTRY,
    LOAD_PERIOD,
    LOG_POSITION,
    RESTORED_FROM,
    AHEAD,
    HIST_REBUILD,
    HIST_CHECK,
)


async def load_all(redis: Redis) -> None:
    for script in ALL_SCRIPTS:
        await redis.script_load(script.source)


async def retry_noscript(redis: Redis, send: Callable[[], Awaitable[list[Any]]]) -> list[Any]:
    """``send()``'s results; when Redis has lost its scripts (NOSCRIPT, raised or among the
    results) the scripts are loaded and ``send()`` runs once more, which the scripts'
    idempotence makes safe. The one place a NOSCRIPT is handled."""
    try:
        results = await send()
    except NoScriptError:
        pass
    else:
        if not any(isinstance(r, NoScriptError) for r in results):
            return results
    await load_all(redis)
    return await send()


async def call_script(redis: Redis, call: Call) -> Any:
    """One script call on its own, without a pipeline (for a read, the pipeline's own cost
    was a large share of the request)."""
    script, keys, args = call

    async def send() -> list[Any]:
        return [await redis.evalsha(script.sha, len(keys), *keys, *args)]

    [result] = await retry_noscript(redis, send)
    return result


Command = tuple[str, tuple[Any, ...]]

# One folded script call's bound (stores/redis/writes.py coalesce, batch.py fold): Redis
# refuses a command of more than 1,048,576 arguments ("invalid mbulk count"), and a huge one
# holds the server for its whole run; a replay of a long log folds hundreds of thousands of
# runs on one key. Past it the next call starts a new folded call, in order. (Ids are at
# most 128 characters, so a call of 40,000 arguments is a few MB at most.)
FOLD_MAX_ARGS = 40_000


async def send_requests(
    redis: Redis, requests: Sequence[tuple[Sequence[Call], Sequence[Command]]]
) -> list[Any]:
    """Requests' script calls (each request's then its plain commands) in one round trip:
    one result per call or command, in order; errors are left in place."""

    async def send() -> list[Any]:
        pipe = redis.pipeline(transaction=False)
        for calls, extra in requests:
            for script, keys, args in calls:
                pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            for command, command_args in extra:
                pipe.execute_command(command, *command_args)
        results: list[Any] = await pipe.execute(raise_on_error=False)
        return results

    return await retry_noscript(redis, send)


async def run_pipeline(
    redis: Redis, calls: Sequence[Call], extra: Sequence[tuple[str, tuple[Any, ...]]] = ()
) -> list[Any]:
    """Run script calls (then plain commands from ``extra``) in one round trip.

    Returns one result per call, then one per extra command, in order. Errors other than
    NOSCRIPT are raised.
    """
    results = await send_requests(redis, [(calls, extra)])
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results
