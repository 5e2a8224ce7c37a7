-- Subscriptions keep their definition as sent (re-parsed when evaluated); notifications are read
-- by channel cursor and pruned by age.
ALTER TABLE subscriptions ADD COLUMN definition jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE INDEX subscriptions_by_zone ON subscriptions (zone_id) WHERE zone_id IS NOT NULL;
