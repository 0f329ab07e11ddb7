-- The D1 schema after every migration in migrations/[0-9]*.sql, for reading.
-- Written by `make schema`; a test fails when it differs from the migrations.
-- Not applied by anything: change the schema with a new numbered migration.

-- alert_cursor
CREATE TABLE alert_cursor (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  evaluated_to INTEGER NOT NULL,
  updated_at   TEXT
);

-- alert_rules
CREATE TABLE alert_rules (
  id              INTEGER PRIMARY KEY,
  type            TEXT NOT NULL,
  watch_id        INTEGER,
  params          TEXT NOT NULL DEFAULT '{}', -- JSON: the type's thresholds
  channel         TEXT NOT NULL CHECK (channel IN ('slack', 'webhook')),
  url             TEXT NOT NULL,
  secret          TEXT NOT NULL,              -- HMAC-SHA256 key of the signature header
  created_at      TEXT NOT NULL,
  hour            INTEGER NOT NULL DEFAULT 0, -- hours since the Unix epoch the counts are of
  hour_sent       INTEGER NOT NULL DEFAULT 0, -- alerts made that hour (a summary included)
  hour_suppressed INTEGER NOT NULL DEFAULT 0  -- alerts held back that hour by the storm bound
);
CREATE INDEX idx_alert_rules_watch ON alert_rules (watch_id) WHERE watch_id IS NOT NULL;

-- alert_watches
CREATE TABLE alert_watches (
  id          INTEGER PRIMARY KEY,
  kind        TEXT NOT NULL CHECK (kind IN ('app', 'keyword', 'segment')),
  target      TEXT NOT NULL,
  created_at  TEXT NOT NULL,              -- d1.Layout
  created_ms  INTEGER NOT NULL,           -- ms since the Unix epoch: no change before it alerts
  searched_at TEXT,                       -- keyword: crawl_keywords.searched_at of the ranks kept
  ranks       TEXT,                       -- keyword: JSON [[track id, rank], ...], the top alerts.TrackedRanks
  UNIQUE (kind, target)
);

-- alerts
CREATE TABLE alerts (
  id           INTEGER PRIMARY KEY,
  rule_id      INTEGER NOT NULL,
  watch_id     INTEGER,
  type         TEXT NOT NULL,
  payload      TEXT NOT NULL,              -- JSON: what the webhook receives
  created_at   TEXT NOT NULL,
  state        TEXT NOT NULL DEFAULT 'pending',
  attempts     INTEGER NOT NULL DEFAULT 0,
  deliveries   TEXT NOT NULL DEFAULT '[]',
  delivered_at TEXT,
  dedup        TEXT
);
CREATE UNIQUE INDEX idx_alerts_dedup ON alerts (dedup) WHERE dedup IS NOT NULL;
CREATE INDEX idx_alerts_pending ON alerts (created_at) WHERE state = 'pending';

-- analyst_briefs
CREATE TABLE analyst_briefs (
  brief_id          TEXT PRIMARY KEY,
  cluster_id        TEXT NOT NULL,
  state             TEXT NOT NULL,              -- queued | ready | calling | done | failed
  trigger           TEXT NOT NULL,              -- schedule | api
  attempt           INTEGER NOT NULL DEFAULT 0, -- validation attempt (1..llm.MaxAttempts)
  calls             INTEGER NOT NULL DEFAULT 0, -- LLM calls started (each one a llm_spend row)
  prompt_version    TEXT,
  model             TEXT,
  input_json        TEXT,
  prompt_hash       TEXT,                       -- sha256 of the first attempt's messages
  messages_json     TEXT,
  answer            TEXT,                       -- the last raw answer
  brief_json        TEXT,                       -- the validated brief (done)
  headline          TEXT,
  confidence        TEXT,
  error             TEXT,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost_micro_usd    INTEGER NOT NULL DEFAULT 0,
  created_at        TEXT NOT NULL,              -- d1.Layout
  updated_at        TEXT NOT NULL,
  finished_at       TEXT
);
CREATE INDEX analyst_briefs_by_cluster ON analyst_briefs (cluster_id, created_at DESC);
CREATE INDEX analyst_briefs_open ON analyst_briefs (state, created_at);

-- analyst_status
CREATE TABLE analyst_status (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  state          TEXT NOT NULL,                 -- idle | working | stopped_at_cap | rate_limited | disabled | error
  message        TEXT NOT NULL,
  stopped_at_cap INTEGER NOT NULL DEFAULT 0,
  updated_at     TEXT NOT NULL
);

-- app_price_history
CREATE TABLE "app_price_history" (
  track_id INTEGER NOT NULL,
  seen_at  INTEGER NOT NULL, -- ms since the Unix epoch
  price    REAL NOT NULL,
  currency TEXT,
  PRIMARY KEY (track_id, seen_at)
) WITHOUT ROWID;

-- app_registry
CREATE TABLE app_registry (
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
, rankings_filled_at TEXT, competitiveness_score REAL, page_status TEXT, page_format TEXT, page_missing TEXT, page_parser_version INTEGER, rating_share TEXT, enrich_retry_at TEXT, enrich_defers INTEGER NOT NULL DEFAULT 0, enrich_error_class TEXT, lookup_at TEXT, next_refresh_at TEXT, refresh_tier TEXT, last_seen_at TEXT, observed_at TEXT, release_notes TEXT, stale_at TEXT, page_version TEXT, page_rating_count INTEGER, rating_velocity_7d REAL, rating_velocity_30d REAL, refresh_retry_at TEXT, values_at TEXT, enrich_give_ups INTEGER NOT NULL DEFAULT 0);
CREATE INDEX idx_app_registry_enriched
  ON app_registry (track_id) WHERE enrichment_source = 'itunes+store';
CREATE INDEX idx_app_registry_failed
  ON app_registry (enrich_retry_at) WHERE enrichment_source = 'failed';
CREATE INDEX idx_app_registry_queue_value
  ON app_registry (enrich_priority DESC, rating_count DESC, track_id) WHERE enriched_at IS NULL;
CREATE INDEX idx_app_registry_refresh_retry
  ON app_registry (refresh_retry_at) WHERE refresh_retry_at IS NOT NULL;
CREATE INDEX idx_app_registry_refresh_sweep
  ON app_registry (refresh_tier, (track_id * 648055) % 1048576, track_id) WHERE refresh_tier IS NOT NULL;
CREATE INDEX idx_app_registry_unfilled
  ON app_registry (enriched_at) WHERE enrichment_source = 'itunes+store' AND rankings_filled_at IS NULL;
CREATE INDEX idx_app_registry_unlooked
  ON app_registry (track_id) WHERE enriched_at IS NULL AND lookup_at IS NULL;
CREATE INDEX idx_app_registry_untiered
  ON app_registry (track_id) WHERE enrichment_source = 'itunes+store' AND refresh_tier IS NULL;
CREATE TRIGGER app_history_insert AFTER INSERT ON app_registry
WHEN NEW.enrichment_source = 'itunes+store' AND NEW.page_status = 'parsed' AND NEW.enriched_at IS NOT NULL
BEGIN
  UPDATE app_registry SET page_version = NEW.version, page_rating_count = NEW.rating_count,
    last_seen_at = max(COALESCE(NEW.last_seen_at, ''), NEW.enriched_at)
  WHERE track_id = NEW.track_id;
END;
CREATE TRIGGER app_history_price AFTER UPDATE OF price ON app_registry
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
CREATE TRIGGER app_history_ratings AFTER UPDATE OF rating_count, average_rating ON app_registry
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
CREATE TRIGGER app_history_version AFTER UPDATE OF version ON app_registry
WHEN NEW.version IS NOT NULL AND NEW.version <> '' AND NEW.version IS NOT OLD.version
  AND NOT (COALESCE(OLD.version, '') = '' AND OLD.values_at IS NULL AND NEW.values_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = NEW.track_id))
BEGIN
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date)
    SELECT OLD.track_id, CAST(round((julianday(COALESCE(OLD.values_at, OLD.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      OLD.version,
      CASE WHEN OLD.current_version_release_date = strftime('%Y-%m-%dT%H:%M:%SZ', OLD.current_version_release_date) THEN CAST(strftime('%s', OLD.current_version_release_date) AS INTEGER) ELSE OLD.current_version_release_date END
    WHERE OLD.version IS NOT NULL AND OLD.version <> ''
      AND COALESCE(OLD.values_at, OLD.discovered_at) < COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)
      AND NOT EXISTS (SELECT 1 FROM app_version_history WHERE track_id = OLD.track_id);
  INSERT OR IGNORE INTO app_version_history (track_id, seen_at, version, release_date)
    VALUES (NEW.track_id, CAST(round((julianday(COALESCE(NULLIF(max(COALESCE(NEW.observed_at, ''), COALESCE(NEW.updated_at, '')), ''), NEW.enriched_at, NEW.discovered_at)) - 2440587.5) * 86400000) AS INTEGER),
      NEW.version,
      CASE WHEN NEW.current_version_release_date = strftime('%Y-%m-%dT%H:%M:%SZ', NEW.current_version_release_date) THEN CAST(strftime('%s', NEW.current_version_release_date) AS INTEGER) ELSE NEW.current_version_release_date END);
END;
CREATE TRIGGER app_refresh_schedule AFTER UPDATE OF enriched_at ON app_registry
WHEN NEW.enriched_at IS NOT OLD.enriched_at
BEGIN
  UPDATE app_registry SET
    refresh_retry_at = CASE WHEN NEW.enrichment_source = 'itunes+store' THEN NULL ELSE NEW.refresh_retry_at END,
    last_seen_at = CASE WHEN NEW.enrichment_source = 'itunes+store' THEN max(COALESCE(NEW.last_seen_at, ''), NEW.enriched_at) ELSE NEW.last_seen_at END,
    page_version = CASE WHEN NEW.enrichment_source = 'itunes+store' AND NEW.page_status = 'parsed' THEN NEW.version ELSE NEW.page_version END,
    page_rating_count = CASE WHEN NEW.enrichment_source = 'itunes+store' AND NEW.page_status = 'parsed' THEN NEW.rating_count ELSE NEW.page_rating_count END
  WHERE track_id = NEW.track_id;
END;
CREATE TRIGGER app_refresh_version_seen AFTER UPDATE OF version ON app_registry
WHEN NEW.version IS NOT OLD.version AND NEW.enriched_at IS OLD.enriched_at AND NEW.refresh_tier IS NOT NULL
  AND NEW.enrichment_source = 'itunes+store' AND NEW.page_version IS NOT NULL AND NEW.version IS NOT NEW.page_version
  AND NEW.refresh_retry_at IS NULL
BEGIN
  UPDATE app_registry SET refresh_retry_at = COALESCE(NEW.last_seen_at, NEW.updated_at, NEW.enriched_at)
  WHERE track_id = NEW.track_id;
END;
CREATE TRIGGER app_registry_refill_on_rename AFTER UPDATE OF name, subtitle ON app_registry
  WHEN new.rankings_filled_at IS NOT NULL AND (old.name IS NOT new.name OR old.subtitle IS NOT new.subtitle)
BEGIN
  UPDATE app_registry SET rankings_filled_at = NULL WHERE track_id = new.track_id;
END;
CREATE TRIGGER app_search_delete AFTER DELETE ON app_registry
BEGIN
  DELETE FROM app_search_terms WHERE track_id = OLD.track_id AND field IN (1, 2, 3)
    AND term IN (substr(lower(trim(OLD.name)), 1, 100), substr(lower(trim(OLD.developer_name)), 1, 100), substr(lower(trim(OLD.subtitle)), 1, 100));
END;
CREATE TRIGGER app_search_developer AFTER UPDATE OF developer_name ON app_registry
WHEN substr(lower(trim(COALESCE(OLD.developer_name, ''))), 1, 100) IS NOT substr(lower(trim(COALESCE(NEW.developer_name, ''))), 1, 100)
BEGIN
  DELETE FROM app_search_terms WHERE term = substr(lower(trim(OLD.developer_name)), 1, 100) AND track_id = OLD.track_id AND field = 2;
  INSERT OR IGNORE INTO app_search_terms (term, track_id, field)
    SELECT substr(lower(trim(NEW.developer_name)), 1, 100), NEW.track_id, 2 WHERE trim(COALESCE(NEW.developer_name, '')) <> '';
END;
CREATE TRIGGER app_search_insert AFTER INSERT ON app_registry
BEGIN
  INSERT OR IGNORE INTO app_search_terms (term, track_id, field)
    SELECT substr(lower(trim(NEW.name)), 1, 100), NEW.track_id, 1 WHERE trim(COALESCE(NEW.name, '')) <> ''
    UNION ALL SELECT substr(lower(trim(NEW.developer_name)), 1, 100), NEW.track_id, 2 WHERE trim(COALESCE(NEW.developer_name, '')) <> ''
    UNION ALL SELECT substr(lower(trim(NEW.subtitle)), 1, 100), NEW.track_id, 3 WHERE trim(COALESCE(NEW.subtitle, '')) <> '';
END;
CREATE TRIGGER app_search_name AFTER UPDATE OF name ON app_registry
WHEN substr(lower(trim(COALESCE(OLD.name, ''))), 1, 100) IS NOT substr(lower(trim(COALESCE(NEW.name, ''))), 1, 100)
BEGIN
  DELETE FROM app_search_terms WHERE term = substr(lower(trim(OLD.name)), 1, 100) AND track_id = OLD.track_id AND field = 1;
  INSERT OR IGNORE INTO app_search_terms (term, track_id, field)
    SELECT substr(lower(trim(NEW.name)), 1, 100), NEW.track_id, 1 WHERE trim(COALESCE(NEW.name, '')) <> '';
END;
CREATE TRIGGER app_search_subtitle AFTER UPDATE OF subtitle ON app_registry
WHEN substr(lower(trim(COALESCE(OLD.subtitle, ''))), 1, 100) IS NOT substr(lower(trim(COALESCE(NEW.subtitle, ''))), 1, 100)
BEGIN
  DELETE FROM app_search_terms WHERE term = substr(lower(trim(OLD.subtitle)), 1, 100) AND track_id = OLD.track_id AND field = 3;
  INSERT OR IGNORE INTO app_search_terms (term, track_id, field)
    SELECT substr(lower(trim(NEW.subtitle)), 1, 100), NEW.track_id, 3 WHERE trim(COALESCE(NEW.subtitle, '')) <> '';
END;
CREATE TRIGGER apps_known_add AFTER INSERT ON app_registry
BEGIN
  UPDATE pipeline_counters SET n = n + 1 WHERE name = 'apps_known';
  UPDATE pipeline_counters SET n = n + 1 WHERE name = CASE WHEN NEW.enriched_at IS NULL THEN NULL
    WHEN NEW.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END;
END;
CREATE TRIGGER apps_known_remove AFTER DELETE ON app_registry
BEGIN
  UPDATE pipeline_counters SET n = n - 1 WHERE name = 'apps_known';
  UPDATE pipeline_counters SET n = n - 1 WHERE name = CASE WHEN OLD.enriched_at IS NULL THEN NULL
    WHEN OLD.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END;
END;
CREATE TRIGGER apps_state_change AFTER UPDATE OF enriched_at, enrichment_source ON app_registry
WHEN (CASE WHEN OLD.enriched_at IS NULL THEN NULL WHEN OLD.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END)
  IS NOT (CASE WHEN NEW.enriched_at IS NULL THEN NULL WHEN NEW.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END)
BEGIN
  UPDATE pipeline_counters SET n = n - 1 WHERE name = CASE WHEN OLD.enriched_at IS NULL THEN NULL
    WHEN OLD.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END;
  UPDATE pipeline_counters SET n = n + 1 WHERE name = CASE WHEN NEW.enriched_at IS NULL THEN NULL
    WHEN NEW.enrichment_source IS 'itunes+store' THEN 'apps_enriched' ELSE 'apps_unavailable' END;
END;

-- app_reviews
CREATE TABLE "app_reviews" (
  id          TEXT PRIMARY KEY,
  app_id      INTEGER NOT NULL,
  country     TEXT NOT NULL,
  rating      INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
  title       TEXT NOT NULL,
  body        TEXT NOT NULL,
  truncated   INTEGER NOT NULL DEFAULT 0,
  version     TEXT NOT NULL,
  author_hash TEXT NOT NULL,
  reviewed_at TEXT,            -- d1.Layout; NULL when the feed gave no date
  sentiment   REAL NOT NULL CHECK (sentiment BETWEEN -1 AND 1),
  fetched_at  TEXT NOT NULL    -- d1.Layout: when the stored text was fetched
) WITHOUT ROWID;
CREATE INDEX app_reviews_by_app ON app_reviews (app_id, reviewed_at DESC, id);

-- app_search_terms
CREATE TABLE app_search_terms (
  term     TEXT NOT NULL,     -- lower(trim(value)), its first 100 characters
  track_id INTEGER NOT NULL,
  field    INTEGER NOT NULL,  -- 1 name, 2 developer, 3 subtitle
  PRIMARY KEY (term, track_id, field)
) WITHOUT ROWID;

-- app_snapshots
CREATE TABLE "app_snapshots" (
  track_id       INTEGER NOT NULL,
  taken_at       INTEGER NOT NULL, -- ms since the Unix epoch
  rating_count   INTEGER,
  average_rating REAL,
  source         INTEGER,          -- NULL a sweep's copy; 1 observed, 2 lookup, 3 search, 4 chart
  PRIMARY KEY (track_id, taken_at)
) WITHOUT ROWID;

-- app_version_history
CREATE TABLE "app_version_history" (
  track_id      INTEGER NOT NULL,
  seen_at       INTEGER NOT NULL, -- ms since the Unix epoch
  version       TEXT NOT NULL,
  release_date,                   -- the version's date as the upstream gave it: INTEGER seconds when
                                  -- it is 'YYYY-MM-DDTHH:MM:SSZ' (rendered back the same), else its text
  release_notes TEXT,             -- NULL when the source carries none (searches)
  PRIMARY KEY (track_id, seen_at)
) WITHOUT ROWID;

-- category_scans
CREATE TABLE category_scans (
  genre_id        INTEGER PRIMARY KEY,
  name            TEXT NOT NULL,
  tier            TEXT NOT NULL CHECK (tier IN ('high', 'medium', 'low')),
  last_scanned_at TEXT,            -- ISO-8601; NULL = never scanned
  apps_found      INTEGER,
  scans           INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_category_scans_due_at ON category_scans (tier, COALESCE(last_scanned_at, ''));

-- chart_position_history
CREATE TABLE chart_position_history (
  country    TEXT NOT NULL,
  collection TEXT NOT NULL,
  genre_id   INTEGER NOT NULL,
  track_id   INTEGER NOT NULL,
  seen_at    TEXT NOT NULL,
  rank       INTEGER NOT NULL,
  PRIMARY KEY (track_id, country, collection, genre_id, seen_at)
) WITHOUT ROWID;

-- chart_positions
CREATE TABLE chart_positions (
  country    TEXT NOT NULL,
  collection TEXT NOT NULL,
  genre_id   INTEGER NOT NULL,
  rank       INTEGER NOT NULL,
  track_id   INTEGER NOT NULL,
  seen_at    TEXT NOT NULL,
  PRIMARY KEY (country, collection, genre_id, rank)
) WITHOUT ROWID;
CREATE INDEX idx_chart_positions_track ON chart_positions (track_id);

-- crawl_keywords
CREATE TABLE "crawl_keywords" (
  keyword     TEXT NOT NULL UNIQUE,
  source      TEXT NOT NULL,   -- 'title' | 'subtitle'
  created_at  TEXT NOT NULL,
  searched_at TEXT,            -- NULL = pending
  result_count INTEGER,
  value REAL NOT NULL DEFAULT 0, research_interval_s INTEGER, next_search_at TEXT, due_value REAL,
  id INTEGER PRIMARY KEY       -- keyword_rank_history's key for the keyword
, popularity INTEGER, popularity_prefix INTEGER, popularity_position INTEGER, popularity_at TEXT);
CREATE INDEX idx_crawl_keywords_due_value
  ON crawl_keywords (due_value DESC, next_search_at) WHERE due_value IS NOT NULL;
CREATE INDEX idx_crawl_keywords_pending_value
  ON crawl_keywords (value DESC, created_at) WHERE searched_at IS NULL;
CREATE INDEX idx_crawl_keywords_waiting
  ON crawl_keywords (next_search_at) WHERE due_value IS NULL AND next_search_at IS NOT NULL;

-- crawl_rankings
CREATE TABLE crawl_rankings (
  keyword   TEXT NOT NULL,
  track_id  INTEGER NOT NULL,
  rank      INTEGER NOT NULL,
  seen_at   TEXT NOT NULL,
  PRIMARY KEY (keyword, track_id)
) WITHOUT ROWID;
CREATE INDEX idx_crawl_rankings_track ON crawl_rankings (track_id);

-- dead_letters
CREATE TABLE dead_letters (
  message_id  TEXT PRIMARY KEY,
  queue       TEXT NOT NULL,
  event_type  TEXT,               -- NULL when the body is not a decodable event
  body        TEXT NOT NULL,      -- truncated to 2,000 chars
  received_at TEXT NOT NULL
, body_r2_key TEXT, body_bytes INTEGER, replayed_at TEXT, replays INTEGER NOT NULL DEFAULT 0);
CREATE INDEX idx_dead_letters_received ON dead_letters (received_at DESC);
CREATE INDEX idx_dead_letters_unreplayed
  ON dead_letters (received_at) WHERE replayed_at IS NULL;

-- developers
CREATE TABLE developers (
  developer_id  INTEGER PRIMARY KEY,
  name          TEXT,
  first_seen_at TEXT NOT NULL,
  updated_at    TEXT NOT NULL
, portfolio_due_at TEXT, portfolio_at TEXT);
CREATE INDEX idx_developers_portfolio_due
  ON developers (portfolio_due_at) WHERE portfolio_due_at IS NOT NULL AND portfolio_at IS NULL;

-- fact_minutes
CREATE TABLE fact_minutes (
  source       TEXT NOT NULL,              -- 'controller:<target>' or 'limiter:<key>'
  minute       INTEGER NOT NULL,           -- unix ms of the minute's start: at - at % 60000
  -- controller.tick counters
  ticks        INTEGER NOT NULL DEFAULT 0,
  dispatched   INTEGER NOT NULL DEFAULT 0,
  completed    INTEGER NOT NULL DEFAULT 0,
  failed       INTEGER NOT NULL DEFAULT 0,
  rate_limited INTEGER NOT NULL DEFAULT 0,
  item_errors  INTEGER NOT NULL DEFAULT 0,
  capacity     REAL,                       -- capacity_after of the minute's latest tick that has one
  capacity_at  INTEGER,                    -- that tick's at
  cooldown_ats TEXT NOT NULL DEFAULT '[]', -- JSON: the at of each tick that entered a cooldown
  -- limiter.minute counters
  allowed      INTEGER NOT NULL DEFAULT 0,
  refused      INTEGER NOT NULL DEFAULT 0,
  waited       INTEGER NOT NULL DEFAULT 0, lookup_requests INTEGER NOT NULL DEFAULT 0, page_requests   INTEGER NOT NULL DEFAULT 0, lookup_refusals INTEGER NOT NULL DEFAULT 0, page_refusals   INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (source, minute)
) WITHOUT ROWID;

-- fact_totals
CREATE TABLE fact_totals (
  source  TEXT NOT NULL,
  counter TEXT NOT NULL,
  total   INTEGER NOT NULL,
  PRIMARY KEY (source, counter)
) WITHOUT ROWID;

-- facts
CREATE TABLE facts (
  id          TEXT PRIMARY KEY,              -- UUID from the writer
  source      TEXT NOT NULL,                 -- 'controller:main', 'scheduler:v1', 'limiter:<key>'
  kind        TEXT NOT NULL,                 -- 'controller.tick', 'scheduler.task_run', 'limiter.minute', ...
  at          INTEGER NOT NULL,              -- unix ms, the writer's clock
  counters    TEXT NOT NULL DEFAULT '{}',    -- JSON: deltas of the writer's lifetime counters
  data        TEXT NOT NULL DEFAULT '{}',    -- JSON: what else the fact says
  received_at INTEGER NOT NULL               -- unix ms the consumer stored it
) WITHOUT ROWID;
CREATE INDEX idx_facts_source_at ON facts (source, at);
CREATE TRIGGER facts_add_minute AFTER INSERT ON facts
WHEN NEW.kind = 'controller.tick' OR NEW.kind = 'limiter.minute'
BEGIN
  INSERT INTO fact_minutes (source, minute, ticks, dispatched, completed, failed, rate_limited, item_errors,
    capacity, capacity_at, cooldown_ats, allowed, refused, waited,
    lookup_requests, page_requests, lookup_refusals, page_refusals)
  VALUES (NEW.source, NEW.at - NEW.at % 60000,
    coalesce(json_extract(NEW.counters, '$.ticks'), 0),
    coalesce(json_extract(NEW.counters, '$.dispatched'), 0),
    coalesce(json_extract(NEW.counters, '$.completed'), 0),
    coalesce(json_extract(NEW.counters, '$.failed'), 0),
    coalesce(json_extract(NEW.counters, '$.rate_limited'), 0),
    coalesce(json_extract(NEW.counters, '$.item_errors'), 0),
    CASE WHEN json_type(NEW.data, '$.capacity_after') IN ('integer', 'real') THEN json_extract(NEW.data, '$.capacity_after') END,
    CASE WHEN json_type(NEW.data, '$.capacity_after') IN ('integer', 'real') THEN NEW.at END,
    CASE WHEN coalesce(json_extract(NEW.counters, '$.cooldowns'), 0) > 0 THEN json_array(NEW.at) ELSE '[]' END,
    coalesce(json_extract(NEW.counters, '$.allowed'), 0),
    coalesce(json_extract(NEW.counters, '$.refused'), 0),
    coalesce(json_extract(NEW.counters, '$.waited'), 0),
    coalesce(json_extract(NEW.counters, '$.lookup_requests'), 0),
    coalesce(json_extract(NEW.counters, '$.page_requests'), 0),
    coalesce(json_extract(NEW.counters, '$.lookup_refusals'), 0),
    coalesce(json_extract(NEW.counters, '$.page_refusals'), 0))
  ON CONFLICT (source, minute) DO UPDATE SET
    ticks = ticks + excluded.ticks,
    dispatched = dispatched + excluded.dispatched,
    completed = completed + excluded.completed,
    failed = failed + excluded.failed,
    rate_limited = rate_limited + excluded.rate_limited,
    item_errors = item_errors + excluded.item_errors,
    -- The latest tick's capacity wins, whatever order the facts arrive in
    -- (a NULL excluded.capacity_at compares as not-later: kept).
    capacity = CASE WHEN excluded.capacity_at >= coalesce(capacity_at, 0) THEN excluded.capacity ELSE capacity END,
    capacity_at = CASE WHEN excluded.capacity_at >= coalesce(capacity_at, 0) THEN excluded.capacity_at ELSE capacity_at END,
    cooldown_ats = CASE WHEN excluded.cooldown_ats = '[]' THEN cooldown_ats ELSE json_insert(cooldown_ats, '$[#]', NEW.at) END,
    allowed = allowed + excluded.allowed,
    refused = refused + excluded.refused,
    waited = waited + excluded.waited,
    lookup_requests = lookup_requests + excluded.lookup_requests,
    page_requests = page_requests + excluded.page_requests,
    lookup_refusals = lookup_refusals + excluded.lookup_refusals,
    page_refusals = page_refusals + excluded.page_refusals;
END;
CREATE TRIGGER facts_add_totals AFTER INSERT ON facts
BEGIN
  INSERT INTO fact_totals (source, counter, total) VALUES (NEW.source, '_facts', 1)
    ON CONFLICT (source, counter) DO UPDATE SET total = total + 1;
  INSERT INTO fact_totals (source, counter, total)
    SELECT NEW.source, key, value FROM json_each(NEW.counters) WHERE type = 'integer'
    ON CONFLICT (source, counter) DO UPDATE SET total = total + excluded.total;
END;
CREATE TRIGGER facts_retire_totals AFTER INSERT ON facts
WHEN NEW.kind = 'ledger.retired'
BEGIN
  INSERT INTO fact_totals (source, counter, total)
    SELECT NEW.source, key, -value FROM json_each(NEW.data, '$.totals') WHERE type = 'integer'
    ON CONFLICT (source, counter) DO UPDATE SET total = total + excluded.total;
END;

-- keyword_hint_prefixes
CREATE TABLE keyword_hint_prefixes (
  prefix   TEXT PRIMARY KEY,
  value    REAL NOT NULL,     -- expected value of asking it
  asked_at TEXT,              -- ISO-8601; NULL = never asked
  terms    INTEGER            -- hints its last answer carried
) WITHOUT ROWID;
CREATE INDEX idx_keyword_hint_prefixes_pending
  ON keyword_hint_prefixes (value DESC) WHERE asked_at IS NULL;

-- keyword_rank_history
CREATE TABLE "keyword_rank_history" (
  track_id   INTEGER NOT NULL,
  keyword_id INTEGER NOT NULL,   -- crawl_keywords.id
  day        INTEGER NOT NULL,   -- days since the Unix epoch (UTC)
  rank       INTEGER,            -- NULL: left the keyword's results that day
  PRIMARY KEY (track_id, day, keyword_id) -- an app's days in order: the API's range and the prune's
) WITHOUT ROWID;

-- ledger_mismatches
CREATE TABLE ledger_mismatches (
  source TEXT NOT NULL,
  first_seen INTEGER NOT NULL,  -- unix ms
  delta TEXT NOT NULL,          -- JSON: counter -> writer's counter minus its facts
  closed_at INTEGER,            -- unix ms; NULL = open
  duration_ms INTEGER,
  resolution TEXT,              -- 'repaired' | 'cleared'
  fact_id TEXT,
  PRIMARY KEY (source, first_seen)
) WITHOUT ROWID;
CREATE INDEX idx_ledger_mismatches_closed ON ledger_mismatches (closed_at) WHERE closed_at IS NOT NULL;
CREATE UNIQUE INDEX idx_ledger_mismatches_open ON ledger_mismatches (source) WHERE closed_at IS NULL;

-- llm_spend
CREATE TABLE llm_spend (
  call_id            TEXT PRIMARY KEY,          -- brief_id '/' call number
  day                TEXT NOT NULL,             -- UTC day charged (the day the call started)
  cluster_id         TEXT NOT NULL,
  brief_id           TEXT NOT NULL,
  state              TEXT NOT NULL,             -- reserved | settled | lost
  est_tokens         INTEGER NOT NULL,          -- the OmniLimiter cost
  reserved_micro_usd INTEGER NOT NULL,
  prompt_tokens      INTEGER NOT NULL DEFAULT 0,
  completion_tokens  INTEGER NOT NULL DEFAULT 0,
  cost_micro_usd     INTEGER NOT NULL DEFAULT 0,
  outcome            TEXT,                      -- ok | invalid | rate_limited | error | lost
  created_at         TEXT NOT NULL,
  settled_at         TEXT
);
CREATE INDEX llm_spend_by_brief ON llm_spend (brief_id);
CREATE INDEX llm_spend_by_day ON llm_spend (day, cluster_id);

-- market_clusters
CREATE TABLE market_clusters (
  cluster_id    TEXT PRIMARY KEY,   -- the keyword
  app_count     INTEGER NOT NULL,
  total_ratings INTEGER NOT NULL,
  avg_rating    REAL,
  top_share     REAL,               -- the leader's share of ratings
  computed_at   TEXT NOT NULL
, hhi REAL, fragmentation REAL, fragmented_at TEXT, member_sum INTEGER);
CREATE INDEX idx_market_clusters_size ON market_clusters (total_ratings DESC);
CREATE TRIGGER clusters_add AFTER INSERT ON market_clusters
BEGIN
  UPDATE pipeline_counters SET n = n + 1 WHERE name = 'clusters';
END;
CREATE TRIGGER clusters_remove AFTER DELETE ON market_clusters
BEGIN
  UPDATE pipeline_counters SET n = n - 1 WHERE name = 'clusters';
END;

-- opportunity_scores
CREATE TABLE opportunity_scores (
  cluster_id    TEXT PRIMARY KEY,
  score         REAL NOT NULL,      -- 0–100
  demand        REAL,
  fragmentation REAL,
  quality_gap   REAL,
  computed_at   TEXT NOT NULL
);
CREATE INDEX idx_opportunity_scores_computed
  ON opportunity_scores (computed_at, cluster_id);
CREATE INDEX idx_opportunity_scores_score ON opportunity_scores (score DESC);
CREATE TRIGGER opportunities_add AFTER INSERT ON opportunity_scores
BEGIN
  UPDATE pipeline_counters SET n = n + 1 WHERE name = 'opportunities';
END;
CREATE TRIGGER opportunities_remove AFTER DELETE ON opportunity_scores
BEGIN
  UPDATE pipeline_counters SET n = n - 1 WHERE name = 'opportunities';
END;

-- pipeline_counters
CREATE TABLE pipeline_counters (
  name TEXT PRIMARY KEY,
  n    INTEGER NOT NULL
) WITHOUT ROWID;

-- reparse_jobs
CREATE TABLE reparse_jobs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  scope       TEXT NOT NULL,              -- 'all' | 'failed' | 'incomplete'
  cursor      INTEGER NOT NULL DEFAULT 0, -- last track_id handled
  started_at  TEXT NOT NULL,
  finished_at TEXT,
  pages       INTEGER NOT NULL DEFAULT 0, -- pages read back from R2
  parsed      INTEGER NOT NULL DEFAULT 0,
  unparsed    INTEGER NOT NULL DEFAULT 0,
  missing     INTEGER NOT NULL DEFAULT 0, -- rows whose raw page is gone from R2
  completed   INTEGER NOT NULL DEFAULT 0  -- lookup-only records the reparse completed
);

-- review_fetches
CREATE TABLE review_fetches (
  app_id     INTEGER NOT NULL,
  country    TEXT NOT NULL,
  fetched_at TEXT NOT NULL,    -- d1.Layout
  reviews    INTEGER NOT NULL, -- reviews the fetched page held
  PRIMARY KEY (app_id, country)
) WITHOUT ROWID;

-- segment_dirty
CREATE TABLE segment_dirty (
  keyword   TEXT PRIMARY KEY,
  marked_at TEXT NOT NULL
) WITHOUT ROWID;

-- segment_evaluation_steps
CREATE TABLE segment_evaluation_steps (
  eval_id           TEXT NOT NULL,
  step              INTEGER NOT NULL,
  name              TEXT NOT NULL,
  state             TEXT NOT NULL,              -- pending | ready | calling | done | failed
  attempt           INTEGER NOT NULL DEFAULT 0, -- validation attempt of its answer
  calls             INTEGER NOT NULL DEFAULT 0, -- LLM calls started (each one a llm_spend row)
  input_json        TEXT,                       -- exactly what the step was shown
  prompt_hash       TEXT,                       -- sha256 of the first attempt's messages
  messages_json     TEXT,                       -- the next (or last) call's messages
  answer            TEXT,                       -- the last raw answer
  output_json       TEXT,                       -- the step's validated output
  error             TEXT,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost_micro_usd    INTEGER NOT NULL DEFAULT 0,
  updated_at        TEXT NOT NULL,
  finished_at       TEXT,
  PRIMARY KEY (eval_id, step)
) WITHOUT ROWID;

-- segment_evaluations
CREATE TABLE segment_evaluations (
  eval_id        TEXT PRIMARY KEY,
  segment_id     INTEGER NOT NULL,
  state          TEXT NOT NULL,              -- open | done | failed
  trigger        TEXT NOT NULL,              -- schedule
  model          TEXT,
  prompt_version TEXT NOT NULL,
  error          TEXT,
  cost_micro_usd INTEGER NOT NULL DEFAULT 0, -- the sum of its steps' settled and lost calls
  created_at     TEXT NOT NULL,              -- d1.Layout
  updated_at     TEXT NOT NULL,
  finished_at    TEXT
);
CREATE INDEX segment_evaluations_by_segment ON segment_evaluations (segment_id, created_at DESC);
CREATE INDEX segment_evaluations_open ON segment_evaluations (state, created_at);

-- segment_focus_apps
CREATE TABLE segment_focus_apps (
  track_id   INTEGER PRIMARY KEY,
  segment_id INTEGER NOT NULL,
  since      TEXT NOT NULL      -- d1.Layout: when it entered the set
);

-- segment_focus_keywords
CREATE TABLE segment_focus_keywords (
  keyword    TEXT PRIMARY KEY,
  segment_id INTEGER NOT NULL,
  since      TEXT NOT NULL
) WITHOUT ROWID;

-- segment_keywords
CREATE TABLE segment_keywords (
  keyword    TEXT PRIMARY KEY,
  segment_id INTEGER,
  top_sum    INTEGER NOT NULL
, top TEXT) WITHOUT ROWID;
CREATE INDEX idx_segment_keywords_segment ON segment_keywords (segment_id) WHERE segment_id IS NOT NULL;

-- segment_lineage
CREATE TABLE segment_lineage (
  child_id  INTEGER NOT NULL,
  parent_id INTEGER NOT NULL,
  kind      TEXT NOT NULL,    -- 'split' | 'merge'
  keywords  INTEGER NOT NULL,
  at        TEXT NOT NULL,
  PRIMARY KEY (child_id, parent_id, at)
) WITHOUT ROWID;
CREATE INDEX idx_segment_lineage_parent ON segment_lineage (parent_id);

-- segment_snapshots
CREATE TABLE segment_snapshots (
  segment_id    INTEGER NOT NULL,
  day           TEXT NOT NULL,   -- YYYY-MM-DD
  keyword_count INTEGER NOT NULL,
  total_ratings INTEGER NOT NULL,
  demand        REAL NOT NULL,
  opportunity   REAL NOT NULL,
  leaders_velocity_7d REAL,
  apps          TEXT NOT NULL,   -- JSON array of the segment's track ids
  PRIMARY KEY (segment_id, day)
) WITHOUT ROWID;

-- segments
CREATE TABLE segments (
  id             INTEGER PRIMARY KEY,
  name           TEXT NOT NULL,
  keyword_count  INTEGER NOT NULL,
  app_count      INTEGER NOT NULL,
  total_ratings  INTEGER NOT NULL,
  avg_rating     REAL NOT NULL,
  demand         REAL NOT NULL,
  hhi            REAL NOT NULL,
  fragmentation  REAL NOT NULL,
  quality_gap    REAL NOT NULL,
  competitiveness REAL,
  opportunity    REAL NOT NULL,
  leaders_velocity_7d  REAL,
  leaders_velocity_30d REAL,
  apps           TEXT NOT NULL,              -- JSON [{track_id, keywords, ratings, share}], leaders first
  relations      TEXT NOT NULL DEFAULT '[]', -- JSON [{segment_id, shared_apps}]
  trend          TEXT NOT NULL DEFAULT 'steady',
  trend_score    REAL NOT NULL DEFAULT 3,
  trend_figures  TEXT,                       -- JSON: the figures behind the trend
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  retired_at     TEXT
);
CREATE INDEX idx_segments_demand ON segments (demand DESC, id) WHERE retired_at IS NULL;
CREATE INDEX idx_segments_opportunity ON segments (opportunity DESC, id) WHERE retired_at IS NULL;
CREATE INDEX idx_segments_trend ON segments (trend_score DESC, id) WHERE retired_at IS NULL;

-- sweep_cursors
CREATE TABLE sweep_cursors (
  name       TEXT PRIMARY KEY,
  cursor     INTEGER NOT NULL,
  updated_at TEXT
);

-- usage_months
CREATE TABLE usage_months (
  month           TEXT NOT NULL,              -- 'YYYY-MM' (UTC), or '' (last sample)
  source          TEXT NOT NULL,
  d1_rows_read    INTEGER NOT NULL DEFAULT 0,
  d1_rows_written INTEGER NOT NULL DEFAULT 0,
  do_requests     INTEGER NOT NULL DEFAULT 0,
  queue_ops       INTEGER NOT NULL DEFAULT 0,
  r2_class_a      INTEGER NOT NULL DEFAULT 0,
  r2_class_b      INTEGER NOT NULL DEFAULT 0,
  kv_reads        INTEGER NOT NULL DEFAULT 0,
  kv_writes       INTEGER NOT NULL DEFAULT 0,
  workers_requests INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (month, source)
) WITHOUT ROWID;

-- 42 tables, 39 indexes, 22 triggers.
