-- The Sentinel primaries (by Redis run id) instances have written to, and when one last said
-- so (services/node_writers.py). A node a restore replaced and that nobody has written to for
-- a while is caught up from the log once, whoever wrote to it: an instance restarted during a
-- partition no longer knows that it wrote to the old primary.
CREATE TABLE redis_writers (
    node     text   PRIMARY KEY,
    noted_ms bigint NOT NULL
);
