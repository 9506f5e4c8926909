-- Segments: standings per value of a board's segment dimensions (country:FR), kept in the
-- durable copy beside the global standings (segment ''). Players get profile segments,
-- and a profile may hold segments without a name.
ALTER TABLE player_best ADD COLUMN segment text NOT NULL DEFAULT '';
ALTER TABLE player_best DROP CONSTRAINT player_best_pkey;
ALTER TABLE player_best ADD PRIMARY KEY (board_id, win, period, segment, player_id);
DROP INDEX player_best_rebuild;
CREATE INDEX player_best_rebuild
    ON player_best (board_id, win, period, segment, composite, player_id);

ALTER TABLE sum_runs ADD COLUMN segment text NOT NULL DEFAULT '';
ALTER TABLE sum_runs DROP CONSTRAINT sum_runs_pkey;
ALTER TABLE sum_runs ADD PRIMARY KEY (board_id, win, period, segment, player_id, run_id);

ALTER TABLE periods_seen ADD COLUMN segment text NOT NULL DEFAULT '';
ALTER TABLE periods_seen DROP CONSTRAINT periods_seen_pkey;
ALTER TABLE periods_seen ADD PRIMARY KEY (board_id, win, period, segment);

ALTER TABLE players ALTER COLUMN name DROP NOT NULL;
ALTER TABLE players ADD COLUMN segments jsonb NOT NULL DEFAULT '{}';
