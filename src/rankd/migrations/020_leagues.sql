-- League boards (services/leagues.py). Placements are decided in Redis before a run is
-- logged and written here by the log consumer (or by the season job for players who waited
-- for their tier); the moves are made in the transaction that freezes the period.
CREATE TABLE league_members (
    board_id  text NOT NULL,
    period    text NOT NULL,
    player_id text NOT NULL,
    tier      int  NOT NULL,
    ordinal   int  NOT NULL,  -- the tier's ordinal-th placement: cohort ordinal / cohort_size
    PRIMARY KEY (board_id, period, player_id)
);
-- an erasure finds a player's rows by id alone; an archived period's cohort, by its range
CREATE INDEX league_members_player ON league_members (player_id);
CREATE INDEX league_members_cohort ON league_members (board_id, period, tier, ordinal);
-- the players who waited for a period's tiers, with their arrival (the log carries it), so
-- a rebuild queues them again in the order they came
CREATE TABLE league_waiting (
    board_id  text NOT NULL,
    period    text NOT NULL,
    player_id text NOT NULL,
    arrival   int  NOT NULL,
    PRIMARY KEY (board_id, period, player_id)
);
CREATE INDEX league_waiting_player ON league_waiting (player_id);
-- each player's tier after the last moves (absent: the first tier)
CREATE TABLE league_tiers (
    board_id  text NOT NULL,
    player_id text NOT NULL,
    tier      int  NOT NULL,
    PRIMARY KEY (board_id, player_id)
);
CREATE INDEX league_tiers_player ON league_tiers (player_id);
-- what each frozen period did to each of its members
CREATE TABLE league_history (
    board_id  text NOT NULL,
    period    text NOT NULL,
    player_id text NOT NULL,
    tier      int  NOT NULL,
    cohort    int  NOT NULL,
    rank      int,            -- in the cohort; null: no ranked entry (none shown, or banned)
    moved     text NOT NULL,  -- up, down or stay
    PRIMARY KEY (board_id, period, player_id)
);
CREATE INDEX league_history_player ON league_history (player_id);
-- the periods whose moves are made; pushed: Redis has the tiers they left
CREATE TABLE league_moves (
    board_id text    NOT NULL,
    period   text    NOT NULL,
    start_ms bigint  NOT NULL,
    moved_ms bigint  NOT NULL,
    pushed   boolean NOT NULL DEFAULT false,
    PRIMARY KEY (board_id, period)
);
