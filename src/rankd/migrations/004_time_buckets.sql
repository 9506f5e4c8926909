-- Exact achieved times are kept in Redis beside each entry, in one of 65,521 small hashes
-- per standings key, picked by the member's bytes read as a big-endian number modulo 65521
-- (stores/redis_keys.py time_bucket). The writer stores that bucket with each row so a
-- rebuild can group the times per hash without computing it for millions of rows.
ALTER TABLE player_best ADD COLUMN time_bucket int NOT NULL DEFAULT 0;

CREATE FUNCTION rankd_time_bucket(member text) RETURNS int
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    h bigint := 0;
    b bytea := convert_to(member, 'UTF8');
BEGIN
    FOR i IN 0 .. length(b) - 1 LOOP
        h := (h * 256 + get_byte(b, i)) % 65521;
    END LOOP;
    RETURN h;
END
$$;

UPDATE player_best SET time_bucket = rankd_time_bucket(player_id);
