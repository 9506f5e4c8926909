"""What a rebuild puts back, read under its apply lock: the periods of the durable copy
that Redis serves, narrowed to a board, window or period, each with its board's config, and
who of them is banned or held (to ``:shadow`` and ``:pending``, as PostgreSQL says)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rankd.boards import BoardConfig
from rankd.errors import BoardNotFound
from rankd.periods import PeriodError, PeriodRef, start_ms_of
from rankd.plan import expires_at_ms
from rankd.services.registry import BoardRegistry
from rankd.stores import archive_job
from rankd.stores import moderation as moderation_db
from rankd.stores.postgres import Conn
from rankd.stores.rebuild import pages as rebuild_pages


@dataclass
class Selection:
    todo: list[tuple[PeriodRef, int, BoardConfig]]  # (period, its start ms, its config)
    banned: dict[PeriodRef, list[str]]
    held: dict[PeriodRef, list[tuple[str, int, int]]]
    skipped: list[str] = field(default_factory=list)  # what was left out, and why


async def select(
    conn: Conn,
    boards: BoardRegistry,
    board: str | None,
    window: str | None,
    period: str | None,
    fresh_config: BoardConfig | None,
    now_ms: int,
) -> Selection:
    """The periods to rebuild (``fresh_config``: the board's config as the caller just read
    it, else the registry's)."""
    selected = await rebuild_pages.periods(conn, board, window, period)
    archived = await archive_job.archived_refs(conn, board, window, period)
    chosen = Selection(
        [],
        await moderation_db.banned_entries(conn, board),
        await moderation_db.held_entries(conn, board),
    )
    # a period whose every run waits for review has no entries yet, but its :pending key
    # serves the players' own views
    selected += _held_only(selected, chosen.held, window, period)
    for ref, start_ms in selected:
        board_id, win, pid, _ = ref
        try:
            if fresh_config is not None and fresh_config.board_id == board_id:
                config = fresh_config
            else:
                config = await boards.get(board_id)
        except BoardNotFound:
            chosen.skipped.append(f"{board_id}: no such board")
            continue
        try:
            expires = expires_at_ms(config, config.period_of(win, pid))
        except PeriodError:  # no longer an occurrence of the board's schedule
            chosen.skipped.append(f"{board_id} {win} {pid}: not a period of the board")
            continue
        # archived, or about to be (past its retention): served from the archive; the
        # season job freezes a period not frozen yet from player_best
        if ref not in archived and (expires is None or now_ms < expires):
            chosen.todo.append((ref, start_ms, config))
    return chosen


def _held_only(
    selected: list[tuple[PeriodRef, int]],
    held: dict[PeriodRef, list[tuple[str, int, int]]],
    window: str | None,
    period: str | None,
) -> list[tuple[PeriodRef, int]]:
    """The periods with held runs and no entries, narrowed as ``selected`` was."""
    seen = {ref for ref, _ in selected}
    wanted = [r for r in sorted(held) if r not in seen and window in (None, r.window)]
    return [(r, start_ms_of(r.window, r.period)) for r in wanted if period in (None, r.period)]
