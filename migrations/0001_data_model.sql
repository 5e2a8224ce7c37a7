-- The data model of DESIGN.md. Every row is keyed by its owner first (user, then database), so
-- that the tables can shard by owner without a redesign. Later migrations add columns.

CREATE TABLE users (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL UNIQUE,
    -- CloudKit's userRecordName, e.g. "_3f9a..."; stable and not guessable from the name.
    record_name     text NOT NULL UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE device_tokens (
    user_id         bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The public id shown by `token list` and used by `token revoke`.
    token_id        text NOT NULL,
    -- Only the SHA-256 of the secret is stored; lookups compare digests.
    token_sha256    bytea NOT NULL,
    device_name     text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_used_at    timestamptz,
    revoked_at      timestamptz,
    PRIMARY KEY (user_id, token_id)
);
CREATE UNIQUE INDEX device_tokens_by_digest ON device_tokens (token_sha256);
CREATE UNIQUE INDEX device_tokens_by_id ON device_tokens (token_id);

-- One database per (container, environment, scope, owner): scope 'private' has an owner,
-- 'public' has none.
CREATE TABLE databases (
    id              bigserial PRIMARY KEY,
    owner_user_id   bigint REFERENCES users (id) ON DELETE CASCADE,
    container       text NOT NULL,
    environment     text NOT NULL CHECK (environment IN ('development', 'production')),
    scope           text NOT NULL CHECK (scope IN ('private', 'public', 'shared')),
    -- Database-level change counter: zones/changes tokens.
    change_seq      bigint NOT NULL DEFAULT 0,
    -- Notification counter: webcourier cursors.
    notification_seq bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((scope = 'public') = (owner_user_id IS NULL))
);
CREATE UNIQUE INDEX databases_private_key ON databases (owner_user_id, container, environment, scope) WHERE owner_user_id IS NOT NULL;
CREATE UNIQUE INDEX databases_public_key ON databases (container, environment, scope) WHERE owner_user_id IS NULL;

CREATE TABLE zones (
    database_id     bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    zone_name       text NOT NULL,
    -- A new id per incarnation: a token of a deleted and re-created zone is recognisably old.
    id              bigserial NOT NULL UNIQUE,
    -- Zone-level change counter; writers bump it under the row lock in their transaction, so
    -- within a zone sequence order equals commit order.
    change_seq      bigint NOT NULL DEFAULT 0,
    -- Position of the zone's latest change in the database-level feed.
    database_seq    bigint NOT NULL DEFAULT 0,
    -- Tokens below this sequence may have missed expired tombstones: CHANGE_TOKEN_EXPIRED.
    tombstone_horizon_seq bigint NOT NULL DEFAULT 0,
    deleted         boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (database_id, zone_name)
);
CREATE INDEX zones_by_database_seq ON zones (database_id, database_seq);

CREATE TABLE records (
    zone_id         bigint NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
    record_name     text NOT NULL,
    record_type     text NOT NULL,
    -- Typed values as in API.md: {"name": {"value": ..., "type": "STRING"}}.
    fields          jsonb NOT NULL DEFAULT '{}'::jsonb,
    change_tag      text NOT NULL,
    change_seq      bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by_device text NOT NULL,
    modified_at     timestamptz NOT NULL DEFAULT now(),
    modified_by_device text NOT NULL,
    -- A tombstone: kept for change feeds until the zone's horizon passes it.
    deleted         boolean NOT NULL DEFAULT false,
    -- Retention: when the record may be pruned (NULL: never).
    expires_at      timestamptz,
    PRIMARY KEY (zone_id, record_name)
);
CREATE INDEX records_by_change ON records (zone_id, change_seq);
CREATE INDEX records_expiring ON records (expires_at) WHERE expires_at IS NOT NULL AND NOT deleted;

CREATE TABLE assets (
    database_id     bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    id              bigserial NOT NULL UNIQUE,
    sha256          bytea,
    size            bigint NOT NULL DEFAULT 0,
    -- False while an upload streams in; incomplete assets are removed by the cleaner.
    complete        boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_referenced_at timestamptz,
    referenced      boolean NOT NULL DEFAULT false,
    PRIMARY KEY (database_id, id)
);
CREATE UNIQUE INDEX assets_by_content ON assets (database_id, sha256, size) WHERE complete;

-- Asset content in chunks, so that uploads and downloads stream.
CREATE TABLE asset_chunks (
    asset_id        bigint NOT NULL REFERENCES assets (id) ON DELETE CASCADE,
    n               integer NOT NULL,
    bytes           bytea NOT NULL,
    PRIMARY KEY (asset_id, n)
);

CREATE TABLE subscriptions (
    database_id     bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    subscription_id text NOT NULL,
    subscription_type text NOT NULL CHECK (subscription_type IN ('query', 'zone', 'database')),
    zone_id         bigint REFERENCES zones (id) ON DELETE CASCADE,
    record_type     text,
    -- The query's filterBy, as sent.
    predicate       jsonb,
    fires_on        text[] NOT NULL DEFAULT ARRAY['create', 'update', 'delete'],
    fires_once      boolean NOT NULL DEFAULT false,
    notification_info jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (database_id, subscription_id)
);

-- Written in the same transaction as the change that fires them.
CREATE TABLE notifications (
    database_id     bigint NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    seq             bigint NOT NULL,
    notification_id uuid NOT NULL,
    subscription_id text NOT NULL,
    notification_type text NOT NULL,
    reason          text NOT NULL,
    record_name     text,
    record_type     text,
    zone_name       text,
    -- The device whose change fired it: never delivered back to that device.
    origin_device   text NOT NULL,
    payload         jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (database_id, seq)
);
CREATE INDEX notifications_by_age ON notifications (created_at);

-- Server-wide secrets (the change-token signing key), created at first start.
CREATE TABLE server_secrets (
    name            text PRIMARY KEY,
    secret          bytea NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
