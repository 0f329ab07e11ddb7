-- Upstream outages do not fail items.
-- A 5xx, a timeout or a connection error is the upstream's state, not the
-- item's: the item stays queued with its attempts uncounted, and is not
-- picked again before enrich_retry_at, so one outage does not put the same
-- rows first in every tick. enrich_defers counts such deferrals in a row
-- (it sets the backoff); a stored record resets both.
ALTER TABLE app_registry ADD COLUMN enrich_retry_at TEXT;            -- NULL: due now
ALTER TABLE app_registry ADD COLUMN enrich_defers INTEGER NOT NULL DEFAULT 0;
-- The class of the last item-level failure (parse_error, store_error, ...),
-- so POST /v1/enrichment/retry-failed can requeue one class of give-ups.
ALTER TABLE app_registry ADD COLUMN enrich_error_class TEXT;

-- Given-up items, oldest first: the retry-failed call and task read only these.
CREATE INDEX IF NOT EXISTS idx_app_registry_failed
  ON app_registry (enriched_at) WHERE enrichment_source = 'failed';
