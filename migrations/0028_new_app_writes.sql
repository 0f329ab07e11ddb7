-- A new app writes what it must: D1 bills every row and index entry
-- written, and at the design's pace 182,400 apps a day are new. The
-- counters' and the history's triggers wrote 8 rows of a new app's 22
-- (worker/newapp_cost_test.go counts them); they now write 2.

-- Pipeline counters: the pending apps are the known ones less the
-- settled ones (enriched, or not found or given up: apps_unavailable),
-- so an insert moves one counter (apps_known; a settled insert one more)
-- and a state change at most two (the state left, the state entered),
-- never a counter by 0: an enrichment moves apps_enriched alone, a
-- refresh (enriched_at again, the same state) none. Readers derive
-- apps_pending (worker/history's pipelineCountsSQL).
INSERT OR IGNORE INTO pipeline_counters (name, n)
  SELECT 'apps_unavailable', COALESCE(sum(CASE name WHEN 'apps_known' THEN n ELSE -n END), 0)
  FROM pipeline_counters WHERE name IN ('apps_known', 'apps_pending', 'apps_enriched');
DELETE FROM pipeline_counters WHERE name = 'apps_pending';

-- An app's settled state as its counter's name; NULL (queued) counts in
-- no row (WHERE name = NULL matches none, so nothing is written).
DROP TRIGGER IF EXISTS apps_known_add;
CREATE TRIGGER IF NOT EXISTS apps_known_add AFTER INSERT ON app_registry
BEGIN
  UPDATE pipeline_counters SET n = n + 1 WHERE name = 'apps_known';
  UPDATE pipeline_counters SET n = n + 1 WHERE name = CASE WHEN NEW.enriched_at IS NULL THEN NULL
    WHEN NEW.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END;
END;

DROP TRIGGER IF EXISTS apps_known_remove;
CREATE TRIGGER IF NOT EXISTS apps_known_remove AFTER DELETE ON app_registry
BEGIN
  UPDATE pipeline_counters SET n = n - 1 WHERE name = 'apps_known';
  UPDATE pipeline_counters SET n = n - 1 WHERE name = CASE WHEN OLD.enriched_at IS NULL THEN NULL
    WHEN OLD.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END;
END;

DROP TRIGGER IF EXISTS apps_state_change;
CREATE TRIGGER IF NOT EXISTS apps_state_change AFTER UPDATE OF enriched_at, enrichment_source ON app_registry
WHEN (CASE WHEN OLD.enriched_at IS NULL THEN NULL WHEN OLD.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END)
  IS NOT (CASE WHEN NEW.enriched_at IS NULL THEN NULL WHEN NEW.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END)
BEGIN
  UPDATE pipeline_counters SET n = n - 1 WHERE name = CASE WHEN OLD.enriched_at IS NULL THEN NULL
    WHEN OLD.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END;
  UPDATE pipeline_counters SET n = n + 1 WHERE name = CASE WHEN NEW.enriched_at IS NULL THEN NULL
    WHEN NEW.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END;
END;

-- History keeps changes, and an app's first values are its row's: an
-- insert writes no history (it wrote a snapshot, a version and a price
-- row for every app a search found, three of its rows), nor does the
-- write that brings an app's first lookup-level values (a chart found
-- it with none; its enrichment, a lookup or a search brings them: three
-- rows too). values_at is when that was: the writers that bring them
-- set it once (COALESCE), in the row they write anyway. An app's first
-- values are implicit, held since values_at (discovered_at for a row
-- without it), for as long as it has no row of that series; the first
-- change writes them (at that time) before the new value, so every
-- series with rows holds its first value. Readers (GET
-- /v1/apps/{id}/history, the catalogue sweep's velocities, the rating
-- sweep) take the row's values at that time when a series has no row
-- (for ratings: no observation, source NOT NULL; the sweeps' copies are
-- not one). A first value held for no time (changed at the instant it
-- was first known) is not kept. Rows from before this migration carry
-- no values_at: their history was written by the old triggers, and a
-- value they gain by a write that does not set values_at is written as
-- before.
ALTER TABLE app_registry ADD COLUMN values_at TEXT;

DROP TRIGGER IF EXISTS app_history_insert;
-- Inserted enriched (no queued row before): the page fingerprint and
-- the sighting, as app_refresh_schedule records them on an update.
CREATE TRIGGER IF NOT EXISTS app_history_insert AFTER INSERT ON app_registry
WHEN NEW.enrichment_source = 'itunes+store' AND NEW.page_status = 'parsed' AND NEW.enriched_at IS NOT NULL
BEGIN
  UPDATE app_registry SET page_version = NEW.version, page_rating_count = NEW.rating_count,
    last_seen_at = max(COALESCE(NEW.last_seen_at, ''), NEW.enriched_at)
  WHERE track_id = NEW.track_id;
END;

-- Each trigger: the first values (the baseline, when the series has no
-- row and the old value is known), then the new value, unless it is the
-- app's first value arriving with values_at (implicit).
DROP TRIGGER IF EXISTS app_history_ratings;
CREATE TRIGGER IF NOT EXISTS app_history_ratings AFTER UPDATE OF rating_count, average_rating ON app_registry
WHEN NEW.rating_count IS NOT NULL AND (NEW.rating_count IS NOT OLD.rating_count OR NEW.average_rating IS NOT OLD.average_rating)
  AND NOT (OLD.rating_count IS NULL AND OLD.values_at IS NULL AND NEW.values_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_snapshots WHERE track_id = NEW.track_id AND source IS NOT NULL))
BEGIN
  INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
    SELECT OLD.track_id, COALESCE(OLD.values_at, OLD.discovered_at), OLD.rating_count, OLD.average_rating, 'observed'
    WHERE OLD.rating_count IS NOT NULL
      AND COALESCE(OLD.values_at, OLD.discovered_at) < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_snapshots WHERE track_id = OLD.track_id AND source IS NOT NULL);
  INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
    VALUES (NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.rating_count, NEW.average_rating, 'observed');
END;

DROP TRIGGER IF EXISTS app_history_version;
CREATE TRIGGER IF NOT EXISTS app_history_version AFTER UPDATE OF version ON app_registry
WHEN NEW.version IS NOT NULL AND NEW.version <> '' AND NEW.version IS NOT OLD.version
  AND NOT (COALESCE(OLD.version, '') = '' AND OLD.values_at IS NULL AND NEW.values_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = NEW.track_id))
BEGIN
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date, release_notes, source)
    SELECT OLD.track_id, COALESCE(OLD.values_at, OLD.discovered_at), OLD.version, OLD.current_version_release_date, OLD.release_notes, 'observed'
    WHERE OLD.version IS NOT NULL AND OLD.version <> ''
      AND COALESCE(OLD.values_at, OLD.discovered_at) < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = OLD.track_id);
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date, release_notes, source)
    VALUES (NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.version, NEW.current_version_release_date, NEW.release_notes, 'observed');
END;

DROP TRIGGER IF EXISTS app_history_price;
CREATE TRIGGER IF NOT EXISTS app_history_price AFTER UPDATE OF price ON app_registry
WHEN NEW.price IS NOT NULL AND NEW.price IS NOT OLD.price
  AND NOT (OLD.price IS NULL AND OLD.values_at IS NULL AND NEW.values_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_price_history WHERE track_id = NEW.track_id))
BEGIN
  INSERT OR IGNORE INTO app_price_history (track_id, seen_at, price, currency, source)
    SELECT OLD.track_id, COALESCE(OLD.values_at, OLD.discovered_at), OLD.price, OLD.currency, 'observed'
    WHERE OLD.price IS NOT NULL
      AND COALESCE(OLD.values_at, OLD.discovered_at) < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_price_history WHERE track_id = OLD.track_id);
  INSERT OR IGNORE INTO app_price_history (track_id, seen_at, price, currency, source)
    VALUES (NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.price, NEW.currency, 'observed');
END;
