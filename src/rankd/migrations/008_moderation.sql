-- Moderation: shadow bans and review holds (see services/moderation.py).
--
-- bans: one row per player ever banned; `banned` says whether they are now. Every ban or
-- unban takes the next `seq`, so each instance refreshes its copy by asking only for rows
-- changed since the last seq it saw (a tiny indexed query, several times a second).
CREATE SEQUENCE ban_seq;
CREATE TABLE bans (
    player_id  text    PRIMARY KEY,
    banned     boolean NOT NULL,
    seq        bigint  NOT NULL DEFAULT nextval('ban_seq'),
    changed_ms bigint  NOT NULL
);
CREATE INDEX bans_seq ON bans (seq);

-- holds: a run held for review in one window of a `best` board (it went to the period's
-- :pending key, not to player_best). Approving publishes it (player_best and the public
-- key); rejecting discards it. The row keeps the decision, so the log consumer and a
-- replay follow it. `segments`: the run's segment standings ("dim:value"), which the
-- decision covers too.
CREATE TABLE holds (
    board_id    text   NOT NULL,
    run_id      text   NOT NULL,
    win         text   NOT NULL,
    period      text   NOT NULL,
    player_id   text   NOT NULL,
    score       bigint NOT NULL,
    composite   bigint NOT NULL,
    ended_ms    bigint NOT NULL,
    start_ms    bigint NOT NULL,
    segments    text[] NOT NULL,
    held_ms     bigint NOT NULL,
    status      text   NOT NULL DEFAULT 'pending',  -- 'pending', 'approved', 'rejected'
    PRIMARY KEY (board_id, run_id, win)
);
CREATE INDEX holds_player ON holds (board_id, win, period, player_id);

-- A ban sweeps the periods where the player has entries.
CREATE INDEX player_best_player ON player_best (player_id);
