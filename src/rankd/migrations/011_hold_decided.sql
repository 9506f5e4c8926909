-- When a held run was approved or rejected. A restarted Redis that replays only the log's
-- tail must know whether a decision's Redis write may have been lost with the AOF's last
-- second (services/restart.py); a decision is not in the log, so it asks PostgreSQL.
ALTER TABLE holds ADD COLUMN decided_ms bigint;
CREATE INDEX holds_decided ON holds (decided_ms) WHERE decided_ms IS NOT NULL;
