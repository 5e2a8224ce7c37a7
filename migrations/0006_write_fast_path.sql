-- The write fast path of records/modify: one statement per request.

-- A record's change tag is its zone sequence in base 36 (ChangeTag.make), so it is derived on
-- read instead of being stored and computed per row on write.
ALTER TABLE records DROP COLUMN change_tag;
DROP FUNCTION nimbus_change_tag(bigint);

-- Bumped by every change of a container's schema in one environment, so that a server can plan
-- writes against a schema it cached and check, inside the write, that it is still current.
CREATE TABLE schema_versions (
    container       text NOT NULL,
    environment     text NOT NULL,
    version         bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (container, environment)
);

CREATE FUNCTION nimbus_bump_schema_version() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    changed schema_record_types%ROWTYPE;
BEGIN
    IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
    INSERT INTO schema_versions (container, environment, version)
    VALUES (changed.container, changed.environment, 1)
    ON CONFLICT (container, environment) DO UPDATE SET version = schema_versions.version + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER schema_record_types_version
AFTER INSERT OR UPDATE OR DELETE ON schema_record_types
FOR EACH ROW EXECUTE FUNCTION nimbus_bump_schema_version();
