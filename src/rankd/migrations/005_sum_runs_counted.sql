-- When each run was first counted (ms). A sum board's all-time window takes runs however
-- late they arrive: Redis remembers counted run ids only for a horizon, so for an older run
-- PostgreSQL decides (an insert that conflicts means "already counted"), and this time
-- tells whether Redis may not have taken the count yet (the first count was recent).
ALTER TABLE sum_runs ADD COLUMN counted_ms bigint NOT NULL DEFAULT 0;
