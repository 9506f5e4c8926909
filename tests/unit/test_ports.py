"""Ports for the embedded servers: free, distinct, and clear of outgoing connections'."""

from __future__ import annotations

import os
import random
import socket
import time
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


@pytest.fixture
def reservations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(ports, "RESERVATIONS", tmp_path / "ports")
    return tmp_path / "ports"


def test_a_port_reserved_by_another_pick_is_not_handed_out(reservations: Path) -> None:
    """Two picks that would choose the same ports (the same random draws: two test workers,
    say) get distinct ones: the first's are reserved, in files any process sees."""
    random.seed(7)
    first = ports.pick_ports(20, bus=True)
    random.seed(7)
    second = ports.pick_ports(20, bus=True)
    mine, theirs = (
        {q for p in picked for q in (p, p + ports.BUS_OFFSET)} for picked in (first, second)
    )
    assert len(mine) == len(theirs) == 40 and not mine & theirs
    reserved = {int(f.name) for f in reservations.iterdir() if f.name != ".lock"}
    assert reserved == mine | theirs


def test_a_reservation_lapses(reservations: Path) -> None:
    random.seed(11)
    [port] = ports.pick_ports(1)
    old = time.time() - ports.RESERVED_S - 1
    os.utime(reservations / str(port), (old, old))
    random.seed(11)
    assert ports.pick_ports(1) == [port]  # free, and its reservation over
    assert time.time() - (reservations / str(port)).stat().st_mtime < 60  # reserved again


def test_without_a_usable_directory_picks_still_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "RESERVATIONS", Path("/proc/rankd-ports"))
    picked = ports.pick_ports(3)
    assert len(set(picked)) == 3 and all(ports.is_free(p) for p in picked)
