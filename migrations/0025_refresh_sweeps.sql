-- Refreshes by tier sweeps: each tier's round walks its apps in a fixed
-- order (its slot, track_id) behind a cursor in sweep_cursors
-- ('refresh-hot', 'refresh-warm', 'refresh-cold'); the clock says how far
-- the round should have got (worker/refresh.Due). A refresh writes no
-- schedule: an unchanged app writes nothing, the cursor one row per batch.
-- next_refresh_at and refresh_interval_s are no longer written by the
-- refresh path (kept: dropping columns other code names is not worth it).

-- The retry list: when an app whose refresh failed (refresh.RetryInterval)
-- or met an outage behind apps that were done, or whose new version a
-- search saw, is looked at again, out of its round. NULL for nearly all.
ALTER TABLE app_registry ADD COLUMN refresh_retry_at TEXT;

-- An app's place in its tier's round is its slot, a stable hash of its id
-- in [0, 2^20): (track_id * 648055) % 1048576, worker/refresh.Slot (an odd
-- multiplier: neighbouring ids land far apart; ids below 10^10 cannot
-- overflow). An expression, so no column is written for it.
-- Hot query (the refresh pick, one range per tier):
--   WHERE refresh_tier = ? AND slot >= ? AND slot < ? AND (slot > ? OR track_id > ?)
--   ORDER BY slot, track_id LIMIT ?
-- Static: an entry moves only when its app's tier changes.
CREATE INDEX IF NOT EXISTS idx_app_registry_refresh_sweep
  ON app_registry (refresh_tier, (track_id * 648055) % 1048576, track_id) WHERE refresh_tier IS NOT NULL;

-- Hot query (the refresh pick's retry list):
--   WHERE refresh_retry_at IS NOT NULL AND refresh_retry_at <= ? ORDER BY refresh_retry_at LIMIT ?
CREATE INDEX IF NOT EXISTS idx_app_registry_refresh_retry
  ON app_registry (refresh_retry_at) WHERE refresh_retry_at IS NOT NULL;

-- Hot query (the catalogue sweep's first step): enriched apps without a
-- tier yet (enriched since the last pass), by track id.
CREATE INDEX IF NOT EXISTS idx_app_registry_untiered
  ON app_registry (track_id) WHERE enrichment_source = 'itunes+store' AND refresh_tier IS NULL;

-- The per-app schedule's indexes: moved on every refresh, read no more.
DROP INDEX IF EXISTS idx_app_registry_refresh_due;
DROP INDEX IF EXISTS idx_app_registry_unscheduled;

-- An enrichment (first or refresh) records the sighting and what the
-- page was fetched for, and takes the app off the retry list; it no longer
-- schedules (the tier's round comes back to it).
DROP TRIGGER IF EXISTS app_refresh_schedule;
CREATE TRIGGER IF NOT EXISTS app_refresh_schedule AFTER UPDATE OF enriched_at ON app_registry
WHEN NEW.enriched_at IS NOT OLD.enriched_at
BEGIN
  UPDATE app_registry SET
    refresh_retry_at = CASE WHEN NEW.enrichment_source = 'itunes+store' THEN NULL ELSE NEW.refresh_retry_at END,
    last_seen_at = CASE WHEN NEW.enrichment_source = 'itunes+store' THEN max(COALESCE(NEW.last_seen_at, ''), NEW.enriched_at) ELSE NEW.last_seen_at END,
    page_version = CASE WHEN NEW.enrichment_source = 'itunes+store' AND NEW.page_status = 'parsed' THEN NEW.version ELSE NEW.page_version END,
    page_rating_count = CASE WHEN NEW.enrichment_source = 'itunes+store' AND NEW.page_status = 'parsed' THEN NEW.rating_count ELSE NEW.page_rating_count END
  WHERE track_id = NEW.track_id;
END;

-- A version other than the one the page was fetched for, seen outside an
-- enrichment (a search, a refresh's lookup kept without its page), puts a
-- tiered app on the retry list now, so its page does not wait for its
-- round (a month for a cold app). One row, only on a version change.
CREATE TRIGGER IF NOT EXISTS app_refresh_version_seen AFTER UPDATE OF version ON app_registry
WHEN NEW.version IS NOT OLD.version AND NEW.enriched_at IS OLD.enriched_at AND NEW.refresh_tier IS NOT NULL
  AND NEW.enrichment_source = 'itunes+store' AND NEW.page_version IS NOT NULL AND NEW.version IS NOT NEW.page_version
  AND NEW.refresh_retry_at IS NULL
BEGIN
  UPDATE app_registry SET refresh_retry_at = COALESCE(NEW.last_seen_at, NEW.updated_at, NEW.enriched_at)
  WHERE track_id = NEW.track_id;
END;
