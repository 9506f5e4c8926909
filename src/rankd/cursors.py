"""Top-list cursors (v1.3 `cursor` / `next_cursor`): opaque, signed, bound to one read.

A cursor says where the next page starts. On a live period it is a position: the last
entry's (composite, exact time, player id), and the next page is the entries that sort
after it *now*, whatever moved meanwhile; so no entry that stayed put is repeated or skipped,
at any depth and on sharded boards (each shard is asked for the entries after the position).
In a player's own view or an archived period it is an offset (an own view is one player's
list, an archive never changes).

A cursor is bound to the board incarnation, window, period, segment and viewer it was made
for, and signed (HMAC-SHA256, a service secret shared by every instance through PostgreSQL):
a changed byte, a cursor of another read, or one signed elsewhere is 400, never a wrong page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass

from rankd.errors import InvalidRequest

VERSION = 1
MAC_BYTES = 16  # 128 bits: forging one is out of reach, and cursors stay short
MAX_CURSOR_CHARS = 1024  # longer than any cursor made: refused before any work


@dataclass(frozen=True, slots=True)
class Read:
    """Which list a cursor pages: (board, incarnation, window, period, segment, viewer)."""

    board_id: str
    generation: int
    window: str
    period: str
    segment: str  # "" for the global standings
    viewer: str  # "" for the public view


@dataclass(frozen=True, slots=True)
class Cursor:
    read: Read
    offset: int  # the next page's 0-based first index (an own view, an archive)
    # the last entry given, on a live period's public list: (player id, composite, exact ms)
    position: tuple[str, int, int] | None = None


def encode(cursor: Cursor, key: bytes) -> str:
    r = cursor.read
    fields = [VERSION, r.board_id, r.generation, r.window, r.period, r.segment, r.viewer]
    fields += [cursor.offset, list(cursor.position) if cursor.position else None]
    payload = json.dumps(fields, separators=(",", ":")).encode()
    mac = hmac.new(key, payload, hashlib.sha256).digest()[:MAC_BYTES]
    return base64.urlsafe_b64encode(mac + payload).decode().rstrip("=")


def decode(text: str, key: bytes) -> Cursor:
    """The cursor ``text`` holds; InvalidRequest if it is not one this service made."""
    bad = InvalidRequest("cursor is not a cursor this service gave; start again without it")
    if len(text) > MAX_CURSOR_CHARS or not text.isascii():
        raise bad
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise bad from None
    mac, payload = raw[:MAC_BYTES], raw[MAC_BYTES:]
    if not hmac.compare_digest(mac, hmac.new(key, payload, hashlib.sha256).digest()[:MAC_BYTES]):
        raise bad
    # signed by us: well formed (still checked, so a bug cannot become a 500)
    try:
        version, board, generation, window, period, segment, viewer, offset, position = json.loads(
            payload
        )
        if version != VERSION:
            raise bad
        read = Read(
            str(board), int(generation), str(window), str(period), str(segment), str(viewer)
        )
        at = None
        if position is not None:
            player, composite, ms = position
            at = (str(player), int(composite), int(ms))
        return Cursor(read, int(offset), at)
    except (ValueError, TypeError):
        raise bad from None


def check_read(cursor: Cursor, read: Read) -> None:
    """400 unless ``cursor`` pages this very read: the same list, and an own view's cursor
    the same viewer (a public list's cursor serves any viewer whose view is the public
    list; ``read.viewer`` is the request's)."""
    mine = cursor.read
    same_list = (mine.board_id, mine.generation, mine.window, mine.period, mine.segment) == (
        read.board_id,
        read.generation,
        read.window,
        read.period,
        read.segment,
    )
    if not same_list or mine.viewer not in ("", read.viewer):
        raise InvalidRequest(
            "cursor belongs to another list (board, window, period, segment or viewer); "
            "send it with the same parameters as the page it came from"
        )
