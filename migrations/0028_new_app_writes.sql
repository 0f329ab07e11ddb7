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
-- row for every app a search found, three of its rows). The values an
-- app was inserted with are implicit, held since discovered_at, for as
-- long as the app has no row of that series; the first change writes
-- them (at discovered_at) before the new value, so every series with
-- rows holds its first value. Readers (GET /v1/apps/{id}/history, the
-- catalogue sweep's velocities, the rating sweep) take the row's values
-- at discovered_at when a series has no row (for ratings: no
-- observation, source NOT NULL; the sweeps' copies are not one). A
-- value first known by an update (OLD NULL: a chart found the app, its
-- enrichment brought the rest) is written as it was, by the update.
-- A first value held for no time (changed at its discovery's instant)
-- is not kept.
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

DROP TRIGGER IF EXISTS app_history_ratings;
CREATE TRIGGER IF NOT EXISTS app_history_ratings AFTER UPDATE OF rating_count, average_rating ON app_registry
WHEN NEW.rating_count IS NOT NULL AND (NEW.rating_count IS NOT OLD.rating_count OR NEW.average_rating IS NOT OLD.average_rating)
BEGIN
  INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
    SELECT OLD.track_id, OLD.discovered_at, OLD.rating_count, OLD.average_rating, 'observed'
    WHERE OLD.rating_count IS NOT NULL
      AND OLD.discovered_at < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_snapshots WHERE track_id = OLD.track_id AND source IS NOT NULL);
  INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
    VALUES (NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.rating_count, NEW.average_rating, 'observed');
END;

DROP TRIGGER IF EXISTS app_history_version;
CREATE TRIGGER IF NOT EXISTS app_history_version AFTER UPDATE OF version ON app_registry
WHEN NEW.version IS NOT NULL AND NEW.version <> '' AND NEW.version IS NOT OLD.version
BEGIN
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date, release_notes, source)
    SELECT OLD.track_id, OLD.discovered_at, OLD.version, OLD.current_version_release_date, OLD.release_notes, 'observed'
    WHERE OLD.version IS NOT NULL AND OLD.version <> ''
      AND OLD.discovered_at < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = OLD.track_id);
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date, release_notes, source)
    VALUES (NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.version, NEW.current_version_release_date, NEW.release_notes, 'observed');
END;

DROP TRIGGER IF EXISTS app_history_price;
CREATE TRIGGER IF NOT EXISTS app_history_price AFTER UPDATE OF price ON app_registry
WHEN NEW.price IS NOT NULL AND NEW.price IS NOT OLD.price
BEGIN
  INSERT OR IGNORE INTO app_price_history (track_id, seen_at, price, currency, source)
    SELECT OLD.track_id, OLD.discovered_at, OLD.price, OLD.currency, 'observed'
    WHERE OLD.price IS NOT NULL
      AND OLD.discovered_at < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_price_history WHERE track_id = OLD.track_id);
  INSERT OR IGNORE INTO app_price_history (track_id, seen_at, price, currency, source)
    VALUES (NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.price, NEW.currency, 'observed');
END;
