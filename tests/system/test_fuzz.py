"""The fuzz stage: every operation of /openapi.json, fuzzed with schemathesis once per key
role (no key, server key, admin key, a wrong key) against the session's real servers.

Each role runs in a process of its own (tests/support/fuzz_stage.py says why and what is sent).
Asserted: no 5xx, every 4xx in the contract's error shape, and every response's status,
content type and body as /openapi.json documents them. The count of cases sent per role is
printed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.support.common import Urls
from tests.support.fuzz_stage import ROLES

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240


@pytest.mark.parametrize("role", list(ROLES))
async def test_fuzz_every_operation(
    urls: Urls, role: str, capsys: pytest.CaptureFixture[str]
) -> None:
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
    assert worker.returncode == 0, err.decode(errors="replace")[-4000:]
    result = json.loads(out.decode().strip().splitlines()[-1])
    with capsys.disabled():
        print(
            f"\nfuzz, {role}: {result['cases']} cases over {result['operations']} operations"
            f" in {result['seconds']} s"
        )
    assert not result["problems"], "\n".join(result["problems"])
