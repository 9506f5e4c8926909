"""The boards table's statements: a config upserted without undoing a live resharding's
progress (services/resharding.py writes that, while PUTs of other fields go on)."""

from __future__ import annotations

from typing import Any

from rankd.boards import BoardConfig, from_settings

# A board's early-closed periods (migrations/015_period_closes.sql), loaded with its config.
CLOSES = (
    "(SELECT coalesce(jsonb_agg(jsonb_build_array(c.win, c.period, c.closed_ms)), '[]')"
    " FROM period_closes c WHERE c.board_id = boards.board_id)"
)

# The stored fields only the layout's owner changes: a PUT's own copy of them may be
# stale (the mover advanced meanwhile), so an update keeps the row's unless it sets them.
_KEPT_LAYOUT = (
    "jsonb_build_object('shards', boards.config->'shards',"
    " 'shard_base', coalesce(boards.config->'shard_base', '0'),"
    " 'reshard', coalesce(boards.config->'reshard', 'null'))"
)

# %(layout)s: the PUT sets the layout (a new board, an empty board's shards, a move's start);
# %(served)s: then only if the row still serves this layout with no move under way (else
# the update is skipped and no row comes back).
PUT = (
    "INSERT INTO boards (board_id, config, generation)"
    " VALUES (%(id)s, %(config)s, nextval('board_generation_seq'))"
    " ON CONFLICT (board_id) DO UPDATE SET"
    f" config = EXCLUDED.config || CASE WHEN %(layout)s THEN '{{}}'::jsonb ELSE {_KEPT_LAYOUT} END,"
    " updated_at = now()"
    " WHERE NOT %(layout)s OR (coalesce(boards.config->'reshard', 'null') = 'null'"
    "  AND (boards.config->>'shards')::int = %(shards)s"
    "  AND coalesce((boards.config->>'shard_base')::int, 0) = %(base)s)"
    f" RETURNING config, created_at, (xmax = 0) AS created, generation, {CLOSES}"
)


def closes_of(rows: list[list[Any]]) -> dict[tuple[str, str], int]:
    return {(str(win), str(period)): int(ms) for win, period, ms in rows}


def config_of(board_id: str, row: tuple[Any, ...]) -> BoardConfig:
    """A config from (config, created_at, generation, closes)."""
    return from_settings(board_id, row[0], row[1], int(row[2]), closes_of(row[3]))
