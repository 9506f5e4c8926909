-- Whether counting a late run changed its entry (a total at max_score, or a run older than
-- the total's latest, may leave it as it was), so whichever path settles the run second
-- (the submit path or the log consumer) answers as the first did.
ALTER TABLE sum_runs ADD COLUMN changed boolean NOT NULL DEFAULT true;
