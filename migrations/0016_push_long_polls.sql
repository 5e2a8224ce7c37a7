-- Push: long-poll first across instances, and the delivery log by user (docs/push.md). Only a new
-- table and an index: safe for the previous binary during a rolling upgrade (it never reads the
-- table; its writes hold pushes only for long-polls parked on their own instance, as before).

-- Registered devices with a long-poll parked on some instance, until when at the latest (the
-- poll's wait plus a margin; a device re-polling renews it). The outbox write reads it for every
-- recipient, so a device parked on another instance gets pushGraceMillis to be reached by its poll
-- first. UNLOGGED: a park writes no WAL and commits without a flush; after a crash the table is
-- empty, which only means pushes go at once. No foreign key (a park must not lock the registration);
-- rows of removed registrations are matched by nothing and pruned once past `until`.
CREATE UNLOGGED TABLE push_long_polls (
    registration_id bigint PRIMARY KEY,
    until           timestamptz NOT NULL
);

-- `nimbus push log USER` and the console's log of one user (newest first), and the cascade when a
-- user is deleted.
CREATE INDEX push_log_by_user ON push_log (user_id, at, id);
