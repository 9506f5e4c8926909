"""Unit tests start no server: `make test-fast` runs this folder alone, in seconds.

A test here that asks for the session's servers (directly or through another fixture) fails
at once, naming the folder it belongs in instead.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def urls() -> None:
    pytest.fail(
        "tests/unit starts no servers: a test that needs Redis, PostgreSQL or NATS belongs "
        "in tests/integration (or tests/system)"
    )


@pytest.fixture
def server_dir() -> None:
    pytest.fail("tests/unit starts no servers: embedded servers belong in tests/system")
