"""The PostgreSQL copy's paging: every row exactly once, in order, across ties at page edges."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from rankd.codec import player_of
from rankd.periods import PeriodRef
from rankd.stores import standings
from tests.support.common import Urls


@pytest.mark.usefixtures("migrated")
@pytest.mark.parametrize("size", [1, 2, 3, 7, 100])
async def test_pages_cover_every_row_once_across_ties(urls: Urls, size: int) -> None:
    board = f"pages-{uuid.uuid4().hex[:8]}"
    rows = [(f"p{i:02d}", 1000 + i // 4) for i in range(23)]  # runs of 4 equal composites
    async with await psycopg.AsyncConnection.connect(urls.postgres, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO player_best"
            " (board_id, win, period, player_id, composite, score, achieved_ms, run_id)"
            " SELECT %s, 'all-time', 'all-time', p, c, c, 0, 'r'"
            " FROM unnest(%s::text[], %s::bigint[]) AS u(p, c)",
            (board, [p for p, _ in rows], [c for _, c in rows]),
        )
        got: list[tuple[str, int]] = []
        page_sizes = []
        key = PeriodRef(board, "all-time", "all-time")
        async for members, arguments in standings.pages(
            conn, standings.ENTRY_PAGE_SQL, key, (-1, ""), size=size
        ):
            page_sizes.append(members)
            parts = arguments.split(b"\x01")[:-1]  # $len, score, $len, member, ...
            pairs = [
                (player_of(parts[i + 3].decode()), int(parts[i + 1]))
                for i in range(0, len(parts), 4)
            ]
            assert len(pairs) == members
            got.extend(pairs)
    assert got == sorted(rows, key=lambda r: (r[1], r[0]))
    assert all(n == size for n in page_sizes[:-1])
