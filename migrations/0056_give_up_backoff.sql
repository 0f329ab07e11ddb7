-- A given-up app is retried later each time it gives up again
-- (registry.GiveUpExtraWaitDays): the give-ups are counted, and the
-- retry-failed task takes an app by its retry time (enrich_retry_at, the
-- give-up's time plus its extra wait), not by the give-up's time. Apps
-- given up before this are due at their give-up's time, as before.
ALTER TABLE app_registry ADD COLUMN enrich_give_ups INTEGER NOT NULL DEFAULT 0;
UPDATE app_registry SET enrich_retry_at = enriched_at, enrich_give_ups = 1 WHERE enrichment_source = 'failed';
DROP INDEX idx_app_registry_failed;
CREATE INDEX idx_app_registry_failed
  ON app_registry (enrich_retry_at) WHERE enrichment_source = 'failed';
