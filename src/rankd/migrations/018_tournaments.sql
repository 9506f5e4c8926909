-- Scheduled boards' admission (services/tournaments.py): who joined each occurrence and
-- which runs each counted. Written by the join route and the log consumer (each counted run
-- carries its admission, decided before logging); a rebuild puts them back in Redis.
CREATE TABLE tournament_entrants (
    board_id  text   NOT NULL,
    period    text   NOT NULL,
    player_id text   NOT NULL,
    joined_ms bigint NOT NULL,
    PRIMARY KEY (board_id, period, player_id)
);
CREATE TABLE tournament_tries (
    board_id  text NOT NULL,
    period    text NOT NULL,
    player_id text NOT NULL,
    run_id    text NOT NULL,
    PRIMARY KEY (board_id, period, player_id, run_id)
);
