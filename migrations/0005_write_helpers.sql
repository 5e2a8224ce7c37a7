-- Helpers for the single-statement write path of records/modify.

-- Change tags are the record's zone sequence in base 36 (as ChangeTag.make in NimbusCore).
CREATE FUNCTION nimbus_change_tag(sequence bigint) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    digits constant text := '0123456789abcdefghijklmnopqrstuvwxyz';
    value bigint := sequence;
    result text := '';
BEGIN
    IF value = 0 THEN RETURN '0'; END IF;
    WHILE value > 0 LOOP
        result := substr(digits, (value % 36)::int + 1, 1) || result;
        value := value / 36;
    END LOOP;
    RETURN result;
END $$;

-- Aborts the statement that calls it with serialization_failure (40001): the optimistic write
-- found a record changed since it was read, and is retried from the read.
CREATE FUNCTION nimbus_retry(expected bigint, actual bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF expected <> actual THEN
        RAISE EXCEPTION 'a record changed since it was read' USING ERRCODE = '40001';
    END IF;
    RETURN actual;
END $$;
