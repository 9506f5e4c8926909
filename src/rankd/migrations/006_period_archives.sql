-- Frozen standings of closed periods (see services/seasons.py and stores/archive.py).
--
-- One row per frozen period: it is `closed` once frozen here, and `archived` once it has
-- left Redis (archived_ms set), from when on every read of it is served from
-- archive_entries. A segment is "dim:value"; '' is the board's global standings.
CREATE TABLE period_archives (
    board_id    text   NOT NULL,
    win         text   NOT NULL,
    period      text   NOT NULL,
    segment     text   NOT NULL,
    archive_id  bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    start_ms    bigint NOT NULL,
    entries     bigint NOT NULL,  -- the period's final total
    source      text   NOT NULL,  -- where it was frozen from: 'redis' or 'player_best'
    frozen_ms   bigint NOT NULL,  -- the job's clock when it froze the period
    archived_ms bigint,           -- when its keys left Redis (NULL: still in Redis)
    PRIMARY KEY (board_id, win, period, segment)
);

-- The complete final standings, one row per entry, under the period's archive_id (which
-- stands for board, window, period and segment: narrow index keys made freezing 2.6 times
-- faster than repeating the four text columns in both indexes of every row). Reads go by
-- rank (the primary key) or by player (the index), never by scanning a period.
CREATE TABLE archive_entries (
    archive_id  bigint  NOT NULL,
    rank        integer NOT NULL,
    player_id   text    NOT NULL,
    composite   bigint  NOT NULL,  -- as Redis held it: rank-of searches it by rank
    score       bigint  NOT NULL,
    achieved_ms bigint  NOT NULL,  -- exact ms, rendered like a live read's achieved_at
    name        text,              -- the display name when the period was frozen
    PRIMARY KEY (archive_id, rank)
);

CREATE INDEX archive_entries_player ON archive_entries (archive_id, player_id);
