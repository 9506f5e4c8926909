-- Entry metadata (CONTRACT v1.3): the JSON object a run carried, kept as the text the
-- service encoded (compact, at most 1,024 bytes) so every read returns it byte for byte.
-- NULL: none. An entry keeps the metadata of the run that holds it (a sum board's: of its
-- latest counted run); a held run keeps its own until approved; a frozen period keeps
-- each entry's. Nullable columns without a default: added without rewriting the tables.
ALTER TABLE player_best ADD COLUMN metadata text;
ALTER TABLE holds ADD COLUMN metadata text;
ALTER TABLE archive_entries ADD COLUMN metadata text;

-- A rebuild restores the metadata of a board's periods in one pass over the rows that
-- have some (services/rebuild.py): this index keeps that pass free on boards with none.
CREATE INDEX player_best_metadata ON player_best (board_id, win, period)
    WHERE metadata IS NOT NULL;
