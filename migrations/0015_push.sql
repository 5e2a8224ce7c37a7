-- Push to sleeping devices (docs/push.md "Registrations and the outbox"). Only new tables: safe for
-- the previous binary during a rolling upgrade. It never reads them and writes no outbox rows; its
-- revocations leave registrations behind, which the outbox and the sender ignore because they
-- join live device tokens only. Deleting notifications (its pruner) drops their queued pushes.

-- A device token's APNs token in one container and environment.
CREATE TABLE push_registrations (
    id               bigserial PRIMARY KEY,
    user_id          bigint NOT NULL,
    device_token_id  text NOT NULL,
    container        text NOT NULL,
    environment      text NOT NULL CHECK (environment IN ('development', 'production')),
    -- Which APNs host: development is Apple's sandbox.
    apns_environment text NOT NULL CHECK (apns_environment IN ('development', 'production')),
    -- Lower-case hex, 16–200 bytes.
    apns_token       text NOT NULL,
    registered_at    timestamptz NOT NULL,
    -- When background pushes were last claimed for it (ms since 1970, the last hour's only): the
    -- maxBackgroundPushesPerHour window. Claimers lock the row to read and extend it.
    background_sent_at bigint[] NOT NULL DEFAULT '{}',
    FOREIGN KEY (user_id, device_token_id) REFERENCES device_tokens (user_id, token_id) ON DELETE CASCADE,
    UNIQUE (device_token_id, container, environment)
);
-- One device token per APNs token in a container and environment: registering it from another
-- device token moves it there (a reinstalled or re-paired app).
CREATE UNIQUE INDEX push_registrations_by_apns_token ON push_registrations (container, environment, apns_token);
-- The outbox write: the registered devices of a notification's user.
CREATE INDEX push_registrations_by_user ON push_registrations (user_id, container, environment);

-- One push per (notification, registered device), written in the notification's transaction.
-- A row is pending until an outcome ends it (then it is deleted and the log keeps the outcome).
CREATE TABLE push_outbox (
    id               bigserial PRIMARY KEY,
    database_id      bigint NOT NULL,
    notification_seq bigint NOT NULL,
    notification_id  uuid NOT NULL,
    registration_id  bigint NOT NULL REFERENCES push_registrations (id) ON DELETE CASCADE,
    push_type        text NOT NULL CHECK (push_type IN ('alert', 'background')),
    -- Derived from the notification and the device: every retry repeats it.
    apns_id          uuid NOT NULL,
    -- Background pushes: the zone (apns-collapse-id; one held push per zone and device).
    collapse_key     text,
    -- The device had a long-poll parked when the notification was written: the push waited
    -- pushGraceMillis and is dropped when the device polls past the notification meanwhile.
    long_poll_first  boolean NOT NULL DEFAULT false,
    -- queued: waiting for due_at. sending: claimed by a sender until due_at (its lease); a
    -- sender that dies leaves the row to be claimed again when the lease runs out.
    state            text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sending')),
    due_at           timestamptz NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    -- The notification's write time plus notificationRetentionDays (apns-expiration).
    expires_at       timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    FOREIGN KEY (database_id, notification_seq) REFERENCES notifications (database_id, seq) ON DELETE CASCADE,
    UNIQUE (database_id, notification_seq, registration_id)
);
-- Claiming: the earliest due rows, `FOR UPDATE SKIP LOCKED`.
CREATE INDEX push_outbox_due ON push_outbox (due_at);
CREATE INDEX push_outbox_by_registration ON push_outbox (registration_id);

-- Every outcome of every push, per device, kept for the notification retention period.
CREATE TABLE push_log (
    id               bigserial PRIMARY KEY,
    at               timestamptz NOT NULL,
    user_id          bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    device_token_id  text NOT NULL,
    container        text NOT NULL,
    environment      text NOT NULL,
    notification_id  uuid NOT NULL,
    push_type        text NOT NULL,
    -- After an attempt: delivered, retry, removed (dead APNs token: registration removed),
    -- failed (given up), expired (no retry before apns-expiration). Without one: expired-queued
    -- (expired while waiting), revoked (its device token was revoked), long-poll (delivered by
    -- long-poll first: the push was dropped), no-topic (its container lost its APNs topic),
    -- merged (a newer background push of its zone went instead).
    outcome          text NOT NULL,
    -- The APNs HTTP status; NULL when there was no answer.
    status           integer,
    reason           text,
    attempts         integer NOT NULL,
    by_long_poll     boolean NOT NULL DEFAULT false
);
CREATE INDEX push_log_by_device ON push_log (device_token_id, container, environment, at);
CREATE INDEX push_log_by_age ON push_log (at);
