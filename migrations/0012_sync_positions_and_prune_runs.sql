-- Where each device last synced each zone, for the admin console's lag (docs/console.md):
-- records/changes notes the position it answered; each instance writes what it noted in one
-- statement every few seconds (SyncPositionRecorder), so reads stay reads. A zone's id changes
-- when it is deleted and created again, so positions of an old incarnation join no zone.
CREATE TABLE device_zone_positions (
    token_id   text NOT NULL REFERENCES device_tokens (token_id) ON DELETE CASCADE,
    zone_id    bigint NOT NULL,
    -- The zone change sequence the device's last answer reached.
    change_seq bigint NOT NULL,
    synced_at  timestamptz NOT NULL,
    PRIMARY KEY (token_id, zone_id)
);

-- Every prune that changed the database (the scheduled job, `nimbus prune`, the console), for
-- the console's "last prune" whichever instance or tool ran it.
CREATE TABLE prune_runs (
    id            bigserial PRIMARY KEY,
    finished_at   timestamptz NOT NULL DEFAULT now(),
    records       bigint NOT NULL,
    tombstones    bigint NOT NULL,
    assets        bigint NOT NULL,
    notifications bigint NOT NULL,
    seconds       double precision NOT NULL
);

-- Tombstones by type and age: the console's retention page counts them per type and what the
-- next prune removes without reading every live record (a million-record table took 0.2 s).
CREATE INDEX records_tombstones_by_type ON records (record_type, modified_at) WHERE deleted;
