-- Record store: who changed a record, DELETE_SELF references, per-container schemas, and the
-- indexes behind the apps' queries.

ALTER TABLE records ADD COLUMN created_by_user text NOT NULL DEFAULT '';
ALTER TABLE records ADD COLUMN modified_by_user text NOT NULL DEFAULT '';

-- Records that reference `target_name` with action DELETE_SELF (same zone): deleting the target
-- deletes them, transitively, in the same transaction.
CREATE TABLE record_references (
    zone_id         bigint NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
    target_name     text NOT NULL,
    source_name     text NOT NULL,
    PRIMARY KEY (zone_id, target_name, source_name)
);
CREATE INDEX record_references_by_source ON record_references (zone_id, source_name);

-- The schema of each container per environment: development grows just in time, production
-- holds what was deployed or imported. A field's type never changes once defined.
CREATE TABLE schema_record_types (
    container       text NOT NULL,
    environment     text NOT NULL CHECK (environment IN ('development', 'production')),
    record_type     text NOT NULL,
    -- {"fieldName": "STRING", ...}
    fields          jsonb NOT NULL DEFAULT '{}'::jsonb,
    retention_days  integer,
    retention_field text,
    append_only     boolean NOT NULL DEFAULT false,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (container, environment, record_type)
);

-- Queries sort on COALESCE(fields->'F'->'value', 'null'): jsonb orders numbers numerically and
-- never fails on a value of another type, and the COALESCE gives missing fields a place in the
-- order (first ascending), so continuation markers need no NULL logic.
CREATE INDEX records_live_by_type ON records (zone_id, record_type, record_name) WHERE NOT deleted;
-- BlockedAppEvent / FailedAuthEvent / RemoteCommand: latest events by timestamp.
CREATE INDEX records_live_by_timestamp ON records
    (zone_id, record_type, (COALESCE(fields->'timestamp'->'value', 'null'::jsonb)), record_name) WHERE NOT deleted;
-- LockedAppList by updatedAt.
CREATE INDEX records_live_by_updated_at ON records
    (zone_id, record_type, (COALESCE(fields->'updatedAt'->'value', 'null'::jsonb)), record_name) WHERE NOT deleted;
-- Maccy HistoryItem by lastCopiedAt.
CREATE INDEX records_live_by_last_copied_at ON records
    (zone_id, record_type, (COALESCE(fields->'lastCopiedAt'->'value', 'null'::jsonb)), record_name) WHERE NOT deleted;
