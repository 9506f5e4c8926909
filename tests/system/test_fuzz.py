"""The fuzz stage: every operation of /openapi.json, fuzzed with schemathesis once per key
role (no key, server key, admin key, a wrong key) against the session's real servers.

Each role runs in a process of its own (tests/support/fuzz_stage.py says why and what is sent).
Asserted: no 5xx, every 4xx in the contract's error shape, and every response's status,
content type and body as /openapi.json documents them. The count of cases sent per role is
printed.

The roles' processes are started together by the module's fixture, at most ``AT_ONCE`` at a
time (each is one busy core: the app and schemathesis in one process), and each role's test
waits for its own: the roles share nothing but the servers (their boards and ids are their
own), so running them side by side checks the same and takes about half the time.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.common import Urls
from tests.support.fuzz_stage import ROLES

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240  # each role's own process, from its start
AT_ONCE = 2
# the longest first, so the short wrong-key role fills the gap at the end
ORDER = ["server-key", "admin-key", "no-key", "wrong-key"]
assert sorted(ORDER) == sorted(ROLES)


@dataclass
class Done:
    returncode: int | None
    out: bytes
    err: bytes


async def run_role(urls: Urls, role: str, slots: asyncio.Semaphore) -> Done:
    async with slots:
        # a subprocess awaited on the event loop: the session app's log consumer keeps running
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.support.fuzz_stage",
            role,
            urls.redis,
            urls.postgres,
            urls.nats,
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(worker.communicate(), TIMEOUT_S)
        finally:
            if worker.returncode is None:
                worker.kill()
                await worker.wait()
        return Done(worker.returncode, out, err)


@pytest.fixture(scope="module")
async def roles(urls: Urls) -> AsyncIterator[dict[str, asyncio.Task[Done]]]:
    slots = asyncio.Semaphore(AT_ONCE)
    tasks = {role: asyncio.create_task(run_role(urls, role, slots)) for role in ORDER}
    try:
        yield tasks
    finally:  # a test stopped early (-x, a timeout): no worker outlives the module
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)


@pytest.mark.parametrize("role", ORDER)
async def test_fuzz_every_operation(
    roles: dict[str, asyncio.Task[Done]], role: str, capsys: pytest.CaptureFixture[str]
) -> None:
    done = await roles[role]
    assert done.returncode == 0, done.err.decode(errors="replace")[-4000:]
    result = json.loads(done.out.decode().strip().splitlines()[-1])
    with capsys.disabled():
        print(
            f"\nfuzz, {role}: {result['cases']} cases over {result['operations']} operations"
            f" in {result['seconds']} s"
        )
    assert not result["problems"], "\n".join(result["problems"])
