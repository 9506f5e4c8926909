-- Secrets the service makes for itself, shared by every instance: the key that signs
-- top-list cursors (rankd/cursors.py), made at random by whichever instance starts first.
CREATE TABLE service_secrets (
    name text PRIMARY KEY,
    secret bytea NOT NULL
);
