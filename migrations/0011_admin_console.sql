-- The admin console (docs/console.md): its own tokens, distinct from device tokens, and an audit
-- trail of every mutation made through it. Only a token's SHA-256 is stored.
CREATE TABLE admin_tokens (
    id           bigserial PRIMARY KEY,
    -- The public id printed by `nimbus admin token issue` and shown in the audit (`adm_...`).
    token_id     text NOT NULL UNIQUE,
    token_sha256 bytea NOT NULL UNIQUE,
    name         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE TABLE admin_audit (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    -- Who: the admin token's public id and name at the time (kept if the token is revoked).
    token_id    text NOT NULL,
    admin_name  text NOT NULL,
    -- What: an action name (`device.revoke`, `device.pair`, …), its target, and details as JSON.
    action      text NOT NULL,
    target      text NOT NULL,
    detail      jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX admin_audit_by_time ON admin_audit (at DESC);
