"""What a 5xx logs for the operator: the chain of causes down to the root."""

from __future__ import annotations

import logging

import pytest

from rankd.api.errors import causes, rankd_error_response
from rankd.errors import Unavailable


def wrapped() -> Unavailable:
    """A logged run not applied, over PostgreSQL unavailable, over a lock timeout."""
    try:
        try:
            try:
                raise TimeoutError("canceling statement due to lock timeout")
            except TimeoutError as root:
                raise Unavailable("PostgreSQL is unavailable right now") from root
        except Unavailable as middle:
            raise Unavailable("the run was logged but the boards are unreachable") from middle
    except Unavailable as top:
        return top


def test_the_chain_reaches_the_root_cause() -> None:
    said = causes(wrapped())
    assert said.startswith("Unavailable('PostgreSQL is unavailable right now')")
    assert said.endswith("TimeoutError('canceling statement due to lock timeout')")


def test_an_error_without_a_cause_says_so_and_a_long_chain_is_cut() -> None:
    assert causes(Unavailable("x")) == "no cause"
    exc: BaseException = ValueError("root")
    for i in range(10):
        try:
            raise Unavailable(f"level {i}") from exc
        except Unavailable as e:
            exc = e
    assert causes(exc).count(" <- ") == 3


def test_a_503_logs_its_root_cause(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="rankd.api"):
        response = rankd_error_response(wrapped())
    assert response.status_code == 503
    assert "lock timeout" in caplog.text
