-- The sort indexes of the apps' queries cover only the record types those queries ask for.
--
-- Each live record was inserted into all three expression indexes of migration 0002, whatever
-- its type (a record without the field under the 'null' key): three expression evaluations and
-- three B-tree insertions per write that only the apps' own types ever use. Restricted by type,
-- a write of any other type maintains the primary key, the change index and
-- records_live_by_type only. A query of another type sorted on one of these fields is answered
-- from records_live_by_type and a sort (as for any field without an index).
--
-- Queries write the record type as a constant (QuerySQLBuilder), which is what lets the planner
-- prove these predicates.
DROP INDEX IF EXISTS records_live_by_timestamp;
DROP INDEX IF EXISTS records_live_by_updated_at;
DROP INDEX IF EXISTS records_live_by_last_copied_at;

-- AppLocker's BlockedAppEvent / FailedAuthEvent / RemoteCommand: latest events by timestamp.
CREATE INDEX records_live_by_timestamp ON records
    (zone_id, record_type, (COALESCE(fields->'timestamp'->'value', 'null'::jsonb)), record_name)
    WHERE NOT deleted AND record_type IN ('BlockedAppEvent', 'FailedAuthEvent', 'RemoteCommand');
-- AppLocker's LockedAppList by updatedAt.
CREATE INDEX records_live_by_updated_at ON records
    (zone_id, record_type, (COALESCE(fields->'updatedAt'->'value', 'null'::jsonb)), record_name)
    WHERE NOT deleted AND record_type = 'LockedAppList';
-- Maccy's HistoryItem by lastCopiedAt.
CREATE INDEX records_live_by_last_copied_at ON records
    (zone_id, record_type, (COALESCE(fields->'lastCopiedAt'->'value', 'null'::jsonb)), record_name)
    WHERE NOT deleted AND record_type = 'HistoryItem';
