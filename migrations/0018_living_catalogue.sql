-- A living catalogue: enriched apps are looked at again on a
-- schedule set by their value (worker/refresh), what the crawl sees again
-- updates what is stored, and what changed is kept as history.

-- When an enriched app is due for a refresh (worker/refresh.NextRefresh);
-- NULL: not enriched (the discovery queue serves it) or not scheduled.
ALTER TABLE app_registry ADD COLUMN next_refresh_at TEXT;
-- The policy's tier when next_refresh_at was set: 'hot' | 'warm' | 'cold'.
ALTER TABLE app_registry ADD COLUMN refresh_tier TEXT;
-- How long the app rests after an enrichment before its refresh is due,
-- in seconds, as the policy last set it (its tier's interval with the
-- app's spread). The trigger below schedules from it, so the policy's
-- numbers live in Go only. NULL: not yet set by the catalogue sweep.
ALTER TABLE app_registry ADD COLUMN refresh_interval_s INTEGER;
-- The last time the upstream showed the app (a chart, a search, a lookup).
ALTER TABLE app_registry ADD COLUMN last_seen_at TEXT;
-- The last time a search or a lookup showed its lookup-level fields
-- (ratings, price, version): the time of a rating observation.
ALTER TABLE app_registry ADD COLUMN observed_at TEXT;
-- The current version's release notes, when a source carries them.
ALTER TABLE app_registry ADD COLUMN release_notes TEXT;
-- Set when the app was not seen for the stale age (the catalogue-stale
-- task); cleared when it is seen again. Stale apps are kept, never deleted.
ALTER TABLE app_registry ADD COLUMN stale_at TEXT;
-- What the lookup said when the store page was last fetched: a refresh
-- whose lookup shows the same version and rating count needs no page
-- (worker/refresh.Unchanged). NULL: unknown, so the next refresh fetches it.
ALTER TABLE app_registry ADD COLUMN page_version TEXT;
ALTER TABLE app_registry ADD COLUMN page_rating_count INTEGER;
-- Ratings per day over the last 7 and 30 days from observations
-- (worker/refresh.Velocity); NULL: not enough observations yet.
ALTER TABLE app_registry ADD COLUMN rating_velocity_7d REAL;
ALTER TABLE app_registry ADD COLUMN rating_velocity_30d REAL;

-- What is known already: an app was last seen when it was enriched or
-- found; an enriched app is next due a month after its enrichment (the long
-- tail's pace; the catalogue sweep brings hot apps forward), and its page
-- was fetched for the version and rating count it has.
UPDATE app_registry SET last_seen_at = COALESCE(enriched_at, discovered_at) WHERE last_seen_at IS NULL;
UPDATE app_registry SET next_refresh_at = strftime('%Y-%m-%dT%H:%M:%fZ', enriched_at, '+30 days'), refresh_tier = 'cold',
  refresh_interval_s = 30 * 86400, page_version = version, page_rating_count = rating_count
  WHERE enrichment_source = 'itunes+store' AND next_refresh_at IS NULL AND enriched_at IS NOT NULL;

-- Hot query (the catalogue sweep's first step): enriched apps the policy
-- has not scheduled yet (enriched since the last pass), by track id.
CREATE INDEX IF NOT EXISTS idx_app_registry_unscheduled
  ON app_registry (track_id) WHERE enrichment_source = 'itunes+store' AND refresh_interval_s IS NULL;

-- The catalogue sweep's facts: is the app in a chart now, and in which
-- clusters (by track id; both tables are keyed by chart or cluster first).
CREATE INDEX IF NOT EXISTS idx_chart_positions_track ON chart_positions (track_id);
CREATE INDEX IF NOT EXISTS idx_market_cluster_members_track ON market_cluster_members (track_id);

-- Hot query (the due-refresh pick): the most overdue refreshes,
--   WHERE next_refresh_at IS NOT NULL AND next_refresh_at <= ? ORDER BY next_refresh_at LIMIT ?
-- and its existence check (LIMIT 1). The partial index holds scheduled
-- apps only, so the pick reads the rows it returns.
CREATE INDEX IF NOT EXISTS idx_app_registry_refresh_due
  ON app_registry (next_refresh_at) WHERE next_refresh_at IS NOT NULL;

-- Rating snapshots: app_snapshots (0002) is the rating history. source
-- says where a row's values come from: NULL, a sweep's copy of the stored
-- values (the rating sweep, the daily snapshot); 'search' | 'chart' |
-- 'lookup', an observation of the upstream at taken_at, written when the
-- count or the average changed. Velocity reads observations only.
ALTER TABLE app_snapshots ADD COLUMN source TEXT;

-- Version changes: one row each time an app is seen with a version other
-- than the stored one (and its first version). Append-only, pruned by age.
CREATE TABLE IF NOT EXISTS app_version_history (
  track_id      INTEGER NOT NULL,
  seen_at       TEXT NOT NULL,
  version       TEXT NOT NULL,
  release_date  TEXT,            -- the version's date as the upstream gave it
  release_notes TEXT,            -- NULL when the source carries none (searches)
  source        TEXT NOT NULL,   -- 'search' | 'lookup'
  PRIMARY KEY (track_id, seen_at)
) WITHOUT ROWID;

-- Price changes: one row each time an app is seen at a price other than
-- the stored one (and its first price).
CREATE TABLE IF NOT EXISTS app_price_history (
  track_id INTEGER NOT NULL,
  seen_at  TEXT NOT NULL,
  price    REAL NOT NULL,
  currency TEXT,
  source   TEXT NOT NULL,
  PRIMARY KEY (track_id, seen_at)
) WITHOUT ROWID;

-- Keyword rank history: where an app ranked for a keyword, one row per
-- app, keyword and UTC day (the day's first search; crawl_rankings keeps
-- the latest). Chart positions per scan are chart_position_history (0003).
CREATE TABLE IF NOT EXISTS keyword_rank_history (
  track_id INTEGER NOT NULL,
  keyword  TEXT NOT NULL,
  day      TEXT NOT NULL,        -- 'YYYY-MM-DD' (UTC)
  rank     INTEGER NOT NULL,
  PRIMARY KEY (track_id, day, keyword) -- an app's days in order: the API's range and the prune's
) WITHOUT ROWID;

-- History baselines from what is stored: each enriched app's ratings,
-- version and price as its enrichment's lookup saw them.
INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
  SELECT track_id, enriched_at, rating_count, average_rating, 'lookup' FROM app_registry
  WHERE enrichment_source = 'itunes+store' AND enriched_at IS NOT NULL AND rating_count IS NOT NULL;
INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date, source)
  SELECT track_id, enriched_at, version, current_version_release_date, 'lookup' FROM app_registry
  WHERE enrichment_source = 'itunes+store' AND enriched_at IS NOT NULL AND version IS NOT NULL AND version <> '';
INSERT OR IGNORE INTO app_price_history (track_id, seen_at, price, currency, source)
  SELECT track_id, enriched_at, price, currency, 'lookup' FROM app_registry
  WHERE enrichment_source = 'itunes+store' AND enriched_at IS NOT NULL AND price IS NOT NULL;

-- History is written by the schema, for every writer alike (the
-- enrichment's record and lookup saves, the crawl's rediscovery): a row
-- when a value is first known or changes, at the time it was observed:
-- the latest of observed_at (rediscovery) and updated_at (enrichment's
-- saves), else its enrichment, else its discovery. A write that changes
-- nothing writes no history.
CREATE TRIGGER IF NOT EXISTS app_history_insert AFTER INSERT ON app_registry
BEGIN
  INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
    SELECT NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.rating_count, NEW.average_rating, 'observed'
    WHERE NEW.rating_count IS NOT NULL;
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date, release_notes, source)
    SELECT NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.version, NEW.current_version_release_date, NEW.release_notes, 'observed'
    WHERE NEW.version IS NOT NULL AND NEW.version <> '';
  INSERT OR IGNORE INTO app_price_history (track_id, seen_at, price, currency, source)
    SELECT NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.price, NEW.currency, 'observed'
    WHERE NEW.price IS NOT NULL;
  -- Inserted enriched (no queued row before): the page fingerprint and
  -- the sighting, as app_refresh_schedule records them on an update.
  UPDATE app_registry SET page_version = NEW.version, page_rating_count = NEW.rating_count,
    last_seen_at = max(COALESCE(NEW.last_seen_at, ''), NEW.enriched_at)
  WHERE track_id = NEW.track_id AND NEW.enrichment_source = 'itunes+store' AND NEW.page_status = 'parsed' AND NEW.enriched_at IS NOT NULL;
END;

CREATE TRIGGER IF NOT EXISTS app_history_ratings AFTER UPDATE OF rating_count, average_rating ON app_registry
WHEN NEW.rating_count IS NOT NULL AND (NEW.rating_count IS NOT OLD.rating_count OR NEW.average_rating IS NOT OLD.average_rating)
BEGIN
  INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
    VALUES (NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.rating_count, NEW.average_rating, 'observed');
END;

CREATE TRIGGER IF NOT EXISTS app_history_version AFTER UPDATE OF version ON app_registry
WHEN NEW.version IS NOT NULL AND NEW.version <> '' AND NEW.version IS NOT OLD.version
BEGIN
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date, release_notes, source)
    VALUES (NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.version, NEW.current_version_release_date, NEW.release_notes, 'observed');
END;

CREATE TRIGGER IF NOT EXISTS app_history_price AFTER UPDATE OF price ON app_registry
WHEN NEW.price IS NOT NULL AND NEW.price IS NOT OLD.price
BEGIN
  INSERT OR IGNORE INTO app_price_history (track_id, seen_at, price, currency, source)
    VALUES (NEW.track_id, COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at),
      NEW.price, NEW.currency, 'observed');
END;

-- An enrichment (first or refresh) schedules the next refresh from the
-- policy's interval and records what the page was fetched for (the
-- unchanged rule's fingerprint); an app that left the enriched state
-- (not found, failed, requeued) is not scheduled.
CREATE TRIGGER IF NOT EXISTS app_refresh_schedule AFTER UPDATE OF enriched_at ON app_registry
WHEN NEW.enriched_at IS NOT OLD.enriched_at
BEGIN
  UPDATE app_registry SET
    next_refresh_at = CASE WHEN NEW.enrichment_source = 'itunes+store' AND NEW.enriched_at IS NOT NULL AND NEW.refresh_interval_s IS NOT NULL
      THEN strftime('%Y-%m-%dT%H:%M:%fZ', NEW.enriched_at, '+' || NEW.refresh_interval_s || ' seconds') END,
    last_seen_at = CASE WHEN NEW.enrichment_source = 'itunes+store' THEN max(COALESCE(NEW.last_seen_at, ''), NEW.enriched_at) ELSE NEW.last_seen_at END,
    page_version = CASE WHEN NEW.enrichment_source = 'itunes+store' AND NEW.page_status = 'parsed' THEN NEW.version ELSE NEW.page_version END,
    page_rating_count = CASE WHEN NEW.enrichment_source = 'itunes+store' AND NEW.page_status = 'parsed' THEN NEW.rating_count ELSE NEW.page_rating_count END
  WHERE track_id = NEW.track_id;
END;

-- Hot queries (GET /v1/apps/{id}/history, the catalogue sweep's velocity
-- and the history prune) read every history table by its primary key's
-- leading track_id: an app's rows, or a range of apps for pruning.
