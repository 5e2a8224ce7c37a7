-- Hardening of devices (docs/api.md "Devices"). Safe for the previous binary during a rolling
-- upgrade: the new index only refuses what it meant to refuse.

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
