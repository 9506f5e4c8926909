-- One player's entry removed from one board period by an admin (a correction, v1.3):
-- runs of that player that ended at or before removed_ms no longer count there, on any
-- path (the submit path, the log consumer, replays, rebuilds); later runs count again.
-- Every instance keeps a copy, refreshed by seq like the bans (services/moderation.py).
-- A removal holds for the board incarnation it was made on (``generation``): a board
-- deleted and created again starts with none.
CREATE SEQUENCE removal_seq;
CREATE TABLE entry_removals (
    board_id   text   NOT NULL,
    win        text   NOT NULL,
    period     text   NOT NULL,
    player_id  text   NOT NULL,
    removed_ms bigint NOT NULL,
    generation bigint NOT NULL,
    seq        bigint NOT NULL DEFAULT nextval('removal_seq'),
    PRIMARY KEY (board_id, win, period, player_id)
);
CREATE INDEX entry_removals_seq ON entry_removals (seq);
