-- A restore from a backup (`nimbus restore`) moves every zone's change sequence forward by a
-- wide gap and remembers it: sequences in (lost_after_seq, lost_through_seq) were never issued
-- by this database's history, so a change token there came from the server's life after the
-- backup, whose changes are gone; it gets CHANGE_TOKEN_EXPIRED (a full resync) instead of a
-- wrong answer. Tokens at or before lost_after_seq, issued before the backup, keep working.
ALTER TABLE zones
    ADD COLUMN lost_after_seq bigint NOT NULL DEFAULT 0,
    ADD COLUMN lost_through_seq bigint NOT NULL DEFAULT 0;
