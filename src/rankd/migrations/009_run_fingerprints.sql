-- The durable side of the run-id registry (services/run_ids.py): the first logged content
-- of every run id per board, recorded by the log consumer in log order. A run whose id is
-- recorded with another player or score, first received less than the registry's memory
-- before it, is applied nowhere (Redis refused it already, unless Redis lost the claim),
-- so Redis and this copy agree. Rows older than that memory are deleted by the season job;
-- a lost Redis registry is restored from these rows and the log's unapplied tail.
CREATE TABLE run_fingerprints (
    board_id    text   NOT NULL,
    run_id      text   NOT NULL,
    player_id   text   NOT NULL,
    score       bigint NOT NULL,
    ended_ms    bigint NOT NULL,
    received_ms bigint NOT NULL,  -- the first logged send's receipt time
    PRIMARY KEY (board_id, run_id)
);
CREATE INDEX run_fingerprints_received ON run_fingerprints (board_id, received_ms);
