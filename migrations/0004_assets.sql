-- Asset uploads and references.

-- An upload URL, used up by a successful upload.
CREATE TABLE asset_uploads (
    id              text PRIMARY KEY,
    database_id     bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    record_type     text NOT NULL,
    field_name      text NOT NULL,
    record_name     text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    used_at         timestamptz
);
CREATE INDEX asset_uploads_by_age ON asset_uploads (created_at);

-- Which records' fields point at which content (by database, SHA-256 and size): an asset that
-- no row points at is collected after the grace period.
CREATE TABLE asset_references (
    zone_id         bigint NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
    record_name     text NOT NULL,
    database_id     bigint NOT NULL,
    sha256          bytea NOT NULL,
    size            bigint NOT NULL,
    PRIMARY KEY (zone_id, record_name, sha256, size)
);
CREATE INDEX asset_references_by_content ON asset_references (database_id, sha256, size);
CREATE INDEX assets_unreferenced_candidates ON assets (created_at) WHERE complete;
