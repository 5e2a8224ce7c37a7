-- records.zone_id no longer references zones(id) by a foreign key.
--
-- Every statement that inserts or moves a record takes its zone's row lock first in the same
-- transaction (UPDATE zones SET change_seq = ... WHERE id = ... AND NOT deleted: the write
-- protocol of DESIGN.md; a zone deleted or revived meanwhile fails that statement's
-- `id = ... AND NOT deleted`), and zones are never deleted as rows (deleting a zone deletes its
-- records under the same lock and marks the zone), so the key's check — a lookup and a KEY SHARE
-- lock on the zone row for every inserted record, run as an after-row trigger — only repeated
-- that lock. It was ~9% of PostgreSQL's CPU per created record.
ALTER TABLE records DROP CONSTRAINT IF EXISTS records_zone_id_fkey;
