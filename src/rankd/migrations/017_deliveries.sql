-- Webhook deliveries (CONTRACT v1.3 hooks.period_closed; services/webhooks.py). One row per
-- board period and event, created with the period's freeze in the same transaction (so
-- exactly once, whichever instance froze it), its body fixed then: every attempt sends the
-- same bytes. Instances claim due rows with a lease (FOR UPDATE SKIP LOCKED), so one sends
-- a delivery at a time; the row is the delivery log GET /v1/boards/{id}/deliveries reads.
CREATE TABLE deliveries (
    delivery_id      text    PRIMARY KEY,  -- "<board>:<window>:<period>" (Rankd-Delivery)
    board_id         text    NOT NULL,
    generation       bigint  NOT NULL DEFAULT 0,
    event            text    NOT NULL,     -- 'period_closed'
    url              text    NOT NULL,
    body             bytea,                -- NULL once delivered or given up: nothing kept
    created_ms       bigint  NOT NULL,
    status           text    NOT NULL DEFAULT 'pending',  -- 'delivered', 'failed'
    attempts         integer NOT NULL DEFAULT 0,
    next_ms          bigint  NOT NULL,     -- when the next attempt is due
    leased_until_ms  bigint  NOT NULL DEFAULT 0,
    last_status      integer,              -- the receiver's last HTTP status (NULL: none)
    last_error       text,
    done_ms          bigint                -- when it was delivered or given up
);
CREATE INDEX deliveries_due ON deliveries (next_ms) WHERE status = 'pending';
CREATE INDEX deliveries_board ON deliveries (board_id, created_ms DESC);
