-- The durable copy of every board period, kept by the log consumer, from which Redis is
-- rebuilt. One row per (board, window, period, player): the entry's composite (the same
-- integer Redis holds), its score and when it was achieved.
CREATE TABLE player_best (
    board_id    text   NOT NULL,
    win         text   NOT NULL,
    period      text   NOT NULL,
    player_id   text   NOT NULL,
    composite   bigint NOT NULL,
    score       bigint NOT NULL,
    achieved_ms bigint NOT NULL,
    run_id      text   NOT NULL,  -- for best boards the run that holds the entry
    PRIMARY KEY (board_id, win, period, player_id)
);

-- Rebuild pages through one period in composite order (Redis loads sorted input fastest);
-- player_id makes the keyset cursor unique.
CREATE INDEX player_best_rebuild ON player_best (board_id, win, period, composite, player_id);

-- Sum boards count each run once per period and player; these rows are the proof.
CREATE TABLE sum_runs (
    board_id  text   NOT NULL,
    win       text   NOT NULL,
    period    text   NOT NULL,
    run_id    text   NOT NULL,
    player_id text   NOT NULL,
    score     bigint NOT NULL,
    ended_ms  bigint NOT NULL,
    PRIMARY KEY (board_id, win, period, player_id, run_id)
);

-- Messages the consumer could never apply (malformed, unknown board), kept for inspection.
CREATE TABLE parked_messages (
    stream_seq bigint PRIMARY KEY,
    subject    text NOT NULL,
    reason     text NOT NULL,
    payload    bytea NOT NULL,
    parked_at  timestamptz NOT NULL DEFAULT now()
);

-- Every period that has entries, so a rebuild knows what to restore without a scan.
CREATE TABLE periods_seen (
    board_id text   NOT NULL,
    win      text   NOT NULL,
    period   text   NOT NULL,
    start_ms bigint NOT NULL,
    PRIMARY KEY (board_id, win, period)
);
