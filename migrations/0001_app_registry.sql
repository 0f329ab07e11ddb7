-- app_registry: one row per app (keyed by track id). Every pipeline stage adds
-- columns; NULL means "not yet processed" and timestamps (not booleans) mark
-- staleness. The EnrichmentController's work queue is
-- `enriched_at IS NULL`, highest enrich_priority first.
CREATE TABLE IF NOT EXISTS app_registry (
  track_id                     INTEGER PRIMARY KEY,
  name                         TEXT,
  bundle_id                    TEXT,
  developer_id                 INTEGER,
  developer_name               TEXT,
  genre                        TEXT,
  genre_id                     INTEGER,
  price                        REAL,
  currency                     TEXT,
  average_rating               REAL,
  rating_count                 INTEGER,
  version                      TEXT,
  release_date                 TEXT,
  current_version_release_date TEXT,
  description                  TEXT,    -- truncated to 2,000 chars at insert
  content_rating               TEXT,
  artwork_url                  TEXT,
  file_size_bytes              INTEGER,
  languages                    TEXT,    -- JSON array of ISO codes
  subtitle                     TEXT,
  rating_histogram             TEXT,    -- JSON [5★, 4★, 3★, 2★, 1★] counts
  iap_count                    INTEGER,
  in_app_purchases             TEXT,    -- JSON [{name, price}]
  similar_app_ids              TEXT,    -- JSON array of track ids
  html_r2_key                  TEXT,    -- raw store page in R2 (HTML_CACHE)
  enrich_priority              INTEGER NOT NULL DEFAULT 0,
  enrich_attempts              INTEGER NOT NULL DEFAULT 0, -- non-rate-limit failures so far
  enrichment_source            TEXT,    -- 'itunes+store' | 'not_found' | 'failed'
  enrich_error                 TEXT,    -- last failure, for operators
  enriched_at                  TEXT,    -- ISO-8601; NULL = still queued
  analyzed_at                  TEXT,    -- set by the queue consumer (app-enriched)
  demand_score                 REAL,    -- set by the queue consumer
  discovered_at                TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at                   TEXT
);

-- Hot query: the controller's pick
--   SELECT track_id, enrich_attempts FROM app_registry WHERE enriched_at IS NULL
--   ORDER BY enrich_priority DESC, track_id LIMIT ?
-- A partial index holds only queued rows, so the pick reads exactly the rows it returns.
CREATE INDEX IF NOT EXISTS idx_app_registry_queue
  ON app_registry (enrich_priority DESC, track_id) WHERE enriched_at IS NULL;

-- app_similar: the "similar apps" edges from store pages (input to clustering).
CREATE TABLE IF NOT EXISTS app_similar (
  app_id     INTEGER NOT NULL,
  similar_id INTEGER NOT NULL,
  position   INTEGER NOT NULL,
  PRIMARY KEY (app_id, similar_id)
) WITHOUT ROWID;
