-- The wire form of a record's fields, as the API writes them ({"name":{"value":V,"type":"T"}}),
-- kept beside the jsonb `fields`: change feeds send it as it is. Printing jsonb was 40% of
-- PostgreSQL's work for a page of changes (and the text still had to be rewritten for the wire).
-- NULL when the fields hold an asset (each answer adds its download URL), for tombstones and for
-- rows written before this migration: those are decoded from `fields`.
-- Every statement that writes `fields` writes this column too (the same text, or NULL).
ALTER TABLE records ADD COLUMN wire_fields text;
