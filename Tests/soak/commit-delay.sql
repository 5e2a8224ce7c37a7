-- Fault injection for the no-missed-change checker (test databases only; see docs/checker.md).
--
-- Every transaction that writes a records row sleeps a random 0..:max_ms milliseconds once,
-- after that row write and before its COMMIT. Every write path of the server takes the zone's
-- change sequence (and, done right, the zone's row lock) before it writes records rows, so the
-- sleep lands in the window between sequence assignment and commit, where a reader could see a
-- later sequence commit first. Installed with:
--   psql "$DATABASE_URL" -v max_ms=20 -f Tests/soak/commit-delay.sql
-- and removed with DROP FUNCTION nimbus_fault_commit_delay() CASCADE.
\set ON_ERROR_STOP on
SELECT set_config('nimbus.fault_max_ms', :'max_ms', false);

CREATE OR REPLACE FUNCTION nimbus_fault_commit_delay() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    -- Once per transaction: the flag is transaction-local and reads '' afterwards.
    IF coalesce(current_setting('nimbus.fault_delayed', true), '') = '' THEN
        PERFORM set_config('nimbus.fault_delayed', 'yes', true);
        PERFORM pg_sleep(random() * MAX_MS / 1000.0);
    END IF;
    RETURN NULL;
END
$body$;

-- The bound is baked into the function body (a setting would have to reach every pooled session).
DO $do$
BEGIN
    EXECUTE replace(pg_get_functiondef('nimbus_fault_commit_delay()'::regprocedure), 'MAX_MS',
                    current_setting('nimbus.fault_max_ms')::int::text);
END
$do$;

DROP TRIGGER IF EXISTS nimbus_fault_commit_delay ON records;
CREATE TRIGGER nimbus_fault_commit_delay AFTER INSERT OR UPDATE ON records
    FOR EACH ROW EXECUTE FUNCTION nimbus_fault_commit_delay();
