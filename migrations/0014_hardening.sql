-- Hardening of devices (docs/api.md "Devices"). Safe for the previous binary during a rolling
-- upgrade: it never reads the new table, and the new index only refuses what it meant to refuse.

-- 1. A device name is unique among a user's live tokens: the name is the device's identity
-- (`origin_device` of notifications, `modified_by_device`), so two live devices with one name
-- would never see each other's changes. Enrollment, `nimbus token issue` and the console insert
-- with ON CONFLICT on this index, so concurrent requests for one name cannot both win.
--
-- Names already used twice: the oldest live token keeps the name; every later one gets its
-- token id appended, `iphone (tok_AbC...)` (cut to 255 characters with the suffix whole), which
-- is unique because token ids are. Nothing is revoked, and each device can see its new name in
-- GET /devices and rename itself by enrolling again. Revoked tokens keep their names.
UPDATE device_tokens t
SET device_name = left(t.device_name, 255 - length(t.token_id) - 3) || ' (' || t.token_id || ')'
FROM (
    SELECT token_id, row_number() OVER (PARTITION BY user_id, device_name ORDER BY created_at, token_id) AS rank
    FROM device_tokens WHERE revoked_at IS NULL
) ranked
WHERE t.token_id = ranked.token_id AND ranked.rank > 1;

CREATE UNIQUE INDEX device_tokens_live_name ON device_tokens (user_id, device_name) WHERE revoked_at IS NULL;

-- 2. Failed enrollments, counted for the whole server (every instance reads and writes here).
-- POST /devices/enroll reserves a row before it checks the code, under a table lock taken by
-- reservations only; a successful enrollment deletes its row, a failed one leaves it to count.
-- Each reservation first deletes rows older than the minute, so the table holds at most the last
-- minute's failures (at most enrollFailuresPerMinute of them when that limit is on).
CREATE TABLE enrollment_failures (
    id           bigserial PRIMARY KEY,
    -- The client address (docs/api.md "Behind a proxy").
    address      text NOT NULL,
    attempted_at timestamptz NOT NULL
);
CREATE INDEX enrollment_failures_by_time ON enrollment_failures (attempted_at);
CREATE INDEX enrollment_failures_by_address ON enrollment_failures (address, attempted_at);
