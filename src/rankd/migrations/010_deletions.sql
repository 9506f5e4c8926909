-- Deleting boards and erasing players (contract v1.2; see services/deletion.py).
--
-- A board's incarnation: every board created takes the next generation, kept with it and
-- carried in each log message of its runs, so the log consumer and a replay apply a run
-- only to the incarnation it was sent to. Boards created before this migration are
-- generation 0, as are log messages written before it.
CREATE SEQUENCE board_generation_seq;
ALTER TABLE boards ADD COLUMN generation bigint NOT NULL DEFAULT 0;

-- Deleted boards: the newest deleted generation of each id. Runs logged for that
-- generation or an older one are skipped (not parked) by the consumer and replays.
CREATE TABLE deleted_boards (
    board_id   text   PRIMARY KEY,
    generation bigint NOT NULL,
    deleted_ms bigint NOT NULL
);

-- Erased players: runs of the player logged at or before `log_seq` (the log's last
-- sequence when the erasure was made) are skipped by the consumer and every replay; runs
-- logged after it are a new player's. `scrubbed_ms` is set once the log's own copies of
-- those runs have been securely deleted (services/deletion.py LogScrubber).
CREATE TABLE erasures (
    player_id   text   PRIMARY KEY,
    log_seq     bigint NOT NULL,
    erased_ms   bigint NOT NULL,
    scrubbed_ms bigint
);
CREATE INDEX erasures_unscrubbed ON erasures (log_seq) WHERE scrubbed_ms IS NULL;
-- the consumer asks, per batch, whether any erasure reaches past its first message
CREATE INDEX erasures_log_seq ON erasures (log_seq);

-- GET /v1/bans pages through the players banned now, newest first, by ban seq.
CREATE INDEX bans_banned ON bans (seq) WHERE banned;
