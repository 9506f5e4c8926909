-- Periods an admin closed before their end (POST /v1/boards/{id}/periods/{period}/close,
-- v1.3): a run received at or after closed_ms counts as closed there, on every path, and
-- the season job freezes the period as if it had ended. Loaded with the board's config
-- (stores/postgres.py), so every instance plans, reads and freezes by it.
CREATE TABLE period_closes (
    board_id  text   NOT NULL,
    win       text   NOT NULL,
    period    text   NOT NULL,
    closed_ms bigint NOT NULL,
    PRIMARY KEY (board_id, win, period)
);
