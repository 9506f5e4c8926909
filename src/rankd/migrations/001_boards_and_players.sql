-- Board configs and player display names.
CREATE TABLE boards (
    board_id   text PRIMARY KEY,
    config     jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE players (
    player_id  text PRIMARY KEY,
    name       text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
