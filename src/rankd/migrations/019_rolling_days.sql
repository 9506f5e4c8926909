-- The rolling-7d window (services/rolling.py): its one period, 'current', is kept in
-- player_best like any other; these rows are each player's best run per UTC day
-- (days since 1970-01-01), written beside it by the log consumer, so the period can be
-- recomputed when a day leaves it (seven days old). Rows older than the window are removed
-- then.
CREATE TABLE rolling_days (
    board_id    text   NOT NULL,
    day         int    NOT NULL,
    segment     text   NOT NULL,
    player_id   text   NOT NULL,
    composite   bigint NOT NULL,
    score       bigint NOT NULL,
    achieved_ms bigint NOT NULL,
    run_id      text   NOT NULL,
    time_bucket int    NOT NULL,
    metadata    text,
    PRIMARY KEY (board_id, day, segment, player_id)
);
-- an erasure finds a player's rows by id alone
CREATE INDEX rolling_days_player ON rolling_days (player_id);

-- The oldest day each board's rolling period was last recomputed for in PostgreSQL, and
-- the oldest Redis's copy was rebuilt for: a pass that died between the two is finished by
-- the next.
CREATE TABLE rolling_state (
    board_id  text PRIMARY KEY,
    pg_day    int  NOT NULL,
    redis_day int  NOT NULL
);
