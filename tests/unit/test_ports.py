"""Ports for the embedded servers: free, distinct, and clear of outgoing connections'."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rankd.embedded import ports


def test_ports_are_free_distinct_and_below_the_ephemeral_range() -> None:
    low, _ = ports.ephemeral_range()
    taken: set[int] = set()
    picked = ports.pick_ports(8, taken)
    assert len(set(picked)) == 8 and taken >= set(picked)
    assert all(ports.LOWEST <= p < low for p in picked)
    for p in picked:
        with socket.socket() as sock:
            sock.bind((ports.HOST, p))


def test_bus_ports_are_free_and_below_the_ephemeral_range_too() -> None:
    low, _ = ports.ephemeral_range()
    taken: set[int] = set()
    picked = ports.pick_ports(6, taken, bus=True)
    buses = [p + ports.BUS_OFFSET for p in picked]
    assert len(set(picked) | set(buses)) == 12 and taken == set(picked) | set(buses)
    assert all(b < low for b in buses) and all(ports.is_free(b) for b in buses)


def test_taken_and_listening_ports_are_skipped() -> None:
    with socket.socket() as listener:
        listener.bind((ports.HOST, ports.free_port()))
        listener.listen()
        busy = listener.getsockname()[1]
        assert not ports.is_free(busy)
        taken = {busy}
        assert busy not in ports.pick_ports(50, taken)


def test_without_room_below_the_range_the_kernel_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (1024, 65535))
    picked = ports.pick_ports(3)
    assert len(set(picked)) == 3 and all(ports.is_free(p) for p in picked)


def test_the_range_is_read_from_the_kernel_or_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    low, high = ports.ephemeral_range()
    assert 1024 <= low < high <= 65535
    monkeypatch.setattr(ports, "_RANGE_FILE", Path("/nonexistent/range"))
    assert ports.ephemeral_range() == (32_768, 60_999)
