-- Pairing codes (docs/api.md "Devices"): an enrolled device, or the admin with `nimbus device pair`,
-- asks for a code; a new device redeems it once with POST /devices/enroll and gets a token of the
-- same user. Codes live here, not in an instance's memory, so any instance redeems a code another
-- instance issued. Only the code's SHA-256 is stored.
CREATE TABLE pairing_codes (
    code_sha256      bytea PRIMARY KEY,
    user_id          bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The token that asked for the code (NULL: `nimbus device pair` on the server's shell).
    created_by_token text,
    -- The name the pairing device suggested for the new one (`deviceName` of POST /devices/pair).
    device_name_hint text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL,
    -- Set when the code is redeemed; a used code is refused like a wrong one.
    used_at          timestamptz,
    -- The token the code enrolled.
    enrolled_token   text
);
-- The per-user cap counts a user's unexpired, unused codes.
CREATE INDEX pairing_codes_by_user ON pairing_codes (user_id, expires_at);
