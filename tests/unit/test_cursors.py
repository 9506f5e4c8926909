"""The cursor codec (rankd/cursors.py): what it encodes comes back; any change, another key,
or another list's read is refused with 400, never decoded into a wrong page."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankd import cursors
from rankd.errors import InvalidRequest

KEY = b"k" * 32
texts = st.text(max_size=40)
reads = st.builds(cursors.Read, texts, st.integers(0, 2**40), texts, texts, texts, texts)
positions = st.none() | st.tuples(texts, st.integers(0, 2**53 - 1), st.integers(0, 2**45))
cursor_values = st.builds(cursors.Cursor, reads, st.integers(0, 2**40), positions)


@given(cursor_values)
def test_a_cursor_round_trips(cursor: cursors.Cursor) -> None:
    text = cursors.encode(cursor, KEY)
    assert text.isascii() and "=" not in text
    assert cursors.decode(text, KEY) == cursor


@given(cursor_values, st.data())
def test_any_changed_byte_is_refused(cursor: cursors.Cursor, data: st.DataObject) -> None:
    raw = bytearray(base64.urlsafe_b64decode(cursors.encode(cursor, KEY) + "=="))
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(InvalidRequest):
        cursors.decode(base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("="), KEY)


@given(cursor_values)
def test_another_services_cursor_is_refused(cursor: cursors.Cursor) -> None:
    with pytest.raises(InvalidRequest):
        cursors.decode(cursors.encode(cursor, b"o" * 32), KEY)


@pytest.mark.parametrize("text", ["", "a", "====", "é", "x" * 2000, "AAAA" * 10])
def test_garbage_is_refused(text: str) -> None:
    with pytest.raises(InvalidRequest):
        cursors.decode(text, KEY)


def test_a_cursor_serves_its_own_list_only() -> None:
    read = cursors.Read("arena", 3, "weekly", "2026-W45", "", "")
    cursor = cursors.Cursor(read, 10, ("p1", 5, 6))
    cursors.check_read(cursor, read)
    # a public list's cursor serves a viewer whose view is the public list
    cursors.check_read(cursor, cursors.Read("arena", 3, "weekly", "2026-W45", "", "p9"))
    for other in (
        cursors.Read("arena", 4, "weekly", "2026-W45", "", ""),
        cursors.Read("arena", 3, "daily", "2026-W45", "", ""),
        cursors.Read("arena", 3, "weekly", "2026-W46", "", ""),
        cursors.Read("arena", 3, "weekly", "2026-W45", "country:FR", ""),
        cursors.Read("other", 3, "weekly", "2026-W45", "", ""),
    ):
        with pytest.raises(InvalidRequest):
            cursors.check_read(cursor, other)
    own = cursors.Cursor(cursors.Read("arena", 3, "weekly", "2026-W45", "", "p1"), 10)
    with pytest.raises(InvalidRequest):
        cursors.check_read(own, read)
