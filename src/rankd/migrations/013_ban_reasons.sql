-- Why a player was banned, as the moderator wrote it (POST /v1/players/{id}/ban's optional
-- {"reason"}), shown in GET /v1/bans; never shown to the player or to a server key.
ALTER TABLE bans ADD COLUMN reason text;
