-- History rows compacted: D1 bills storage, and the history tables are
-- most of a year's growth. Times are INTEGER milliseconds since the Unix
-- epoch (6 bytes, not a 24-character timestamp; readers render them back
-- as '%Y-%m-%dT%H:%M:%fZ', the same text), keyword_rank_history's day is
-- an INTEGER day number since the epoch (2 bytes, not 'YYYY-MM-DD';
-- readers render date(day * 86400, 'unixepoch')) and its keyword is
-- crawl_keywords' integer id (below), version and price rows
-- carry no source (no reader reads it), a version's release date is
-- INTEGER seconds when it is the upstream's 'YYYY-MM-DDTHH:MM:SSZ' (4
-- bytes, not 20: its column has no type, so other text stays text;
-- readers render an integer back as that text), and a rating row's source is a
-- small code (1 'observed' is stored in no byte): NULL a sweep's copy,
-- 1 'observed', 2 'lookup', 3 'search', 4 'chart'; any other text is
-- kept as it was. Rows and keys are otherwise as before: no row written
-- changes in number (each table is still WITHOUT ROWID with no index).
--
-- A stored time as milliseconds: exact for the Layout text the writers
-- store (julianday holds whole milliseconds), rounded for any other.
-- Conversions: ms of text x:
--   CAST(round((julianday(x) - 2440587.5) * 86400000) AS INTEGER)
-- the day number of text x ('YYYY-MM-DD...'):
--   CAST(julianday(substr(x, 1, 10)) - 2440587.5 AS INTEGER)

-- The history triggers name the tables: they go first and come back
-- after the rebuild.
DROP TRIGGER IF EXISTS app_history_ratings;
DROP TRIGGER IF EXISTS app_history_version;
DROP TRIGGER IF EXISTS app_history_price;

CREATE TABLE app_snapshots_compact (
  track_id       INTEGER NOT NULL,
  taken_at       INTEGER NOT NULL, -- ms since the Unix epoch
  rating_count   INTEGER,
  average_rating REAL,
  source         INTEGER,          -- NULL a sweep's copy; 1 observed, 2 lookup, 3 search, 4 chart
  PRIMARY KEY (track_id, taken_at)
) WITHOUT ROWID;
INSERT OR IGNORE INTO app_snapshots_compact (track_id, taken_at, rating_count, average_rating, source)
  SELECT track_id, CAST(round((julianday(taken_at) - 2440587.5) * 86400000) AS INTEGER), rating_count, average_rating,
    CASE source WHEN 'observed' THEN 1 WHEN 'lookup' THEN 2 WHEN 'search' THEN 3 WHEN 'chart' THEN 4 ELSE source END
  FROM app_snapshots WHERE julianday(taken_at) IS NOT NULL;
DROP TABLE app_snapshots;
ALTER TABLE app_snapshots_compact RENAME TO app_snapshots;

CREATE TABLE app_version_history_compact (
  track_id      INTEGER NOT NULL,
  seen_at       INTEGER NOT NULL, -- ms since the Unix epoch
  version       TEXT NOT NULL,
  release_date,                   -- the version's date as the upstream gave it: INTEGER seconds when
                                  -- it is 'YYYY-MM-DDTHH:MM:SSZ' (rendered back the same), else its text
  release_notes TEXT,             -- NULL when the source carries none (searches)
  PRIMARY KEY (track_id, seen_at)
) WITHOUT ROWID;
INSERT OR IGNORE INTO app_version_history_compact (track_id, seen_at, version, release_date, release_notes)
  SELECT track_id, CAST(round((julianday(seen_at) - 2440587.5) * 86400000) AS INTEGER), version,
    CASE WHEN release_date = strftime('%Y-%m-%dT%H:%M:%SZ', release_date) THEN CAST(strftime('%s', release_date) AS INTEGER) ELSE release_date END, release_notes
  FROM app_version_history WHERE julianday(seen_at) IS NOT NULL;
DROP TABLE app_version_history;
ALTER TABLE app_version_history_compact RENAME TO app_version_history;

CREATE TABLE app_price_history_compact (
  track_id INTEGER NOT NULL,
  seen_at  INTEGER NOT NULL, -- ms since the Unix epoch
  price    REAL NOT NULL,
  currency TEXT,
  PRIMARY KEY (track_id, seen_at)
) WITHOUT ROWID;
INSERT OR IGNORE INTO app_price_history_compact (track_id, seen_at, price, currency)
  SELECT track_id, CAST(round((julianday(seen_at) - 2440587.5) * 86400000) AS INTEGER), price, currency
  FROM app_price_history WHERE julianday(seen_at) IS NOT NULL;
DROP TABLE app_price_history;
ALTER TABLE app_price_history_compact RENAME TO app_price_history;

-- A keyword's rank rows are keyed by its id, not its text (2 to 4
-- bytes, not the keyword): crawl_keywords gains an explicit INTEGER
-- PRIMARY KEY, id (its rowid until now, kept; an alias of the rowid
-- keeps its value through a VACUUM or a dump, an implicit rowid may
-- not), and keyword becomes UNIQUE: the same two b-trees (the table and
-- its keyword's index), so a keyword's insert writes the entries it did.
-- Nothing deletes a keyword, so an id names one keyword for good.
CREATE TABLE crawl_keywords_ids (
  keyword     TEXT NOT NULL UNIQUE,
  source      TEXT NOT NULL,   -- 'title' | 'subtitle'
  created_at  TEXT NOT NULL,
  searched_at TEXT,            -- NULL = pending
  result_count INTEGER,
  value REAL NOT NULL DEFAULT 0, research_interval_s INTEGER, next_search_at TEXT, due_value REAL,
  id INTEGER PRIMARY KEY       -- keyword_rank_history's key for the keyword
);
INSERT INTO crawl_keywords_ids (id, keyword, source, created_at, searched_at, result_count, value, research_interval_s, next_search_at, due_value)
  SELECT rowid, keyword, source, created_at, searched_at, result_count, value, research_interval_s, next_search_at, due_value
  FROM crawl_keywords WHERE keyword IS NOT NULL;
DROP TABLE crawl_keywords;
ALTER TABLE crawl_keywords_ids RENAME TO crawl_keywords;
CREATE INDEX IF NOT EXISTS idx_crawl_keywords_pending_value
  ON crawl_keywords (value DESC, created_at) WHERE searched_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_crawl_keywords_due_value
  ON crawl_keywords (due_value DESC, next_search_at) WHERE due_value IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_crawl_keywords_waiting
  ON crawl_keywords (next_search_at) WHERE due_value IS NULL AND next_search_at IS NOT NULL;

CREATE TABLE keyword_rank_history_compact (
  track_id   INTEGER NOT NULL,
  keyword_id INTEGER NOT NULL,   -- crawl_keywords.id
  day        INTEGER NOT NULL,   -- days since the Unix epoch (UTC)
  rank       INTEGER,            -- NULL: left the keyword's results that day
  PRIMARY KEY (track_id, day, keyword_id) -- an app's days in order: the API's range and the prune's
) WITHOUT ROWID;
-- A row of a keyword crawl_keywords does not hold (none should exist)
-- has no id: it is not kept.
INSERT OR IGNORE INTO keyword_rank_history_compact (track_id, keyword_id, day, rank)
  SELECT h.track_id, k.id, CAST(julianday(substr(h.day, 1, 10)) - 2440587.5 AS INTEGER), h.rank
  FROM keyword_rank_history h JOIN crawl_keywords k ON k.keyword = h.keyword
  WHERE julianday(substr(h.day, 1, 10)) IS NOT NULL;
DROP TABLE keyword_rank_history;
ALTER TABLE keyword_rank_history_compact RENAME TO keyword_rank_history;

-- The triggers of migrations/0028, writing the compact rows: the same
-- conditions, the same rows. The observation time t is the text of
-- before, as milliseconds.
CREATE TRIGGER IF NOT EXISTS app_history_ratings AFTER UPDATE OF rating_count, average_rating ON app_registry
WHEN NEW.rating_count IS NOT NULL AND (NEW.rating_count IS NOT OLD.rating_count OR NEW.average_rating IS NOT OLD.average_rating)
  AND NOT (OLD.rating_count IS NULL AND OLD.values_at IS NULL AND NEW.values_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_snapshots WHERE track_id = NEW.track_id AND source IS NOT NULL))
BEGIN
  INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
    SELECT OLD.track_id, CAST(round((julianday(COALESCE(OLD.values_at, OLD.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      OLD.rating_count, OLD.average_rating, 1
    WHERE OLD.rating_count IS NOT NULL
      AND COALESCE(OLD.values_at, OLD.discovered_at) < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_snapshots WHERE track_id = OLD.track_id AND source IS NOT NULL);
  INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating, source)
    VALUES (NEW.track_id, CAST(round((julianday(COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      NEW.rating_count, NEW.average_rating, 1);
END;

CREATE TRIGGER IF NOT EXISTS app_history_version AFTER UPDATE OF version ON app_registry
WHEN NEW.version IS NOT NULL AND NEW.version <> '' AND NEW.version IS NOT OLD.version
  AND NOT (COALESCE(OLD.version, '') = '' AND OLD.values_at IS NULL AND NEW.values_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = NEW.track_id))
BEGIN
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date, release_notes)
    SELECT OLD.track_id, CAST(round((julianday(COALESCE(OLD.values_at, OLD.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      OLD.version,
      CASE WHEN OLD.current_version_release_date = strftime('%Y-%m-%dT%H:%M:%SZ', OLD.current_version_release_date) THEN CAST(strftime('%s', OLD.current_version_release_date) AS INTEGER) ELSE OLD.current_version_release_date END,
      OLD.release_notes
    WHERE OLD.version IS NOT NULL AND OLD.version <> ''
      AND COALESCE(OLD.values_at, OLD.discovered_at) < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = OLD.track_id);
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date, release_notes)
    VALUES (NEW.track_id, CAST(round((julianday(COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      NEW.version,
      CASE WHEN NEW.current_version_release_date = strftime('%Y-%m-%dT%H:%M:%SZ', NEW.current_version_release_date) THEN CAST(strftime('%s', NEW.current_version_release_date) AS INTEGER) ELSE NEW.current_version_release_date END,
      NEW.release_notes);
END;

CREATE TRIGGER IF NOT EXISTS app_history_price AFTER UPDATE OF price ON app_registry
WHEN NEW.price IS NOT NULL AND NEW.price IS NOT OLD.price
  AND NOT (OLD.price IS NULL AND OLD.values_at IS NULL AND NEW.values_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_price_history WHERE track_id = NEW.track_id))
BEGIN
  INSERT OR IGNORE INTO app_price_history (track_id, seen_at, price, currency)
    SELECT OLD.track_id, CAST(round((julianday(COALESCE(OLD.values_at, OLD.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      OLD.price, OLD.currency
    WHERE OLD.price IS NOT NULL
      AND COALESCE(OLD.values_at, OLD.discovered_at) < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_price_history WHERE track_id = OLD.track_id);
  INSERT OR IGNORE INTO app_price_history (track_id, seen_at, price, currency)
    VALUES (NEW.track_id, CAST(round((julianday(COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      NEW.price, NEW.currency);
END;
