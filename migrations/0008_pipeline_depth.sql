-- Ranking fill (the crawl cycle's third-priority task): when an enriched
-- app's keywords (title + subtitle) were last searched for rankings.
-- NULL = never; older than the refresh age = stale.
ALTER TABLE app_registry ADD COLUMN rankings_filled_at TEXT;

-- Hot queries (crawl cycle): the ranking-fill existence check and pick,
--   WHERE enrichment_source = 'itunes+store' AND COALESCE(rankings_filled_at, '') < ?
--   [ORDER BY COALESCE(rankings_filled_at, '')] LIMIT ?
-- One range over enriched apps only (never filled sorts first as ''), so
-- the check reads one row at most.
CREATE INDEX IF NOT EXISTS idx_app_registry_fill_due
  ON app_registry (COALESCE(rankings_filled_at, '')) WHERE enrichment_source = 'itunes+store';

-- Fragmentation analysis (the clusters-ready stage): how spread a market's
-- demand is across its member apps. hhi is the Herfindahl index of their
-- rating shares, fragmentation = 1 − hhi; NULL = not analysed since the
-- cluster's members were last rebuilt. Read by primary key only.
ALTER TABLE market_clusters ADD COLUMN hhi REAL;
ALTER TABLE market_clusters ADD COLUMN fragmentation REAL;
ALTER TABLE market_clusters ADD COLUMN fragmented_at TEXT;

-- Hot query (the rating sweep and the daily snapshots): enriched apps past a cursor,
--   WHERE r.track_id > ? AND r.enrichment_source = 'itunes+store' ORDER BY r.track_id LIMIT ?
-- By primary key alone this reads every queued or failed app in between;
-- the partial index holds enriched apps only, so it reads what it returns.
CREATE INDEX IF NOT EXISTS idx_app_registry_enriched
  ON app_registry (track_id) WHERE enrichment_source = 'itunes+store';

-- Dead letters: EVENTS messages that failed max_retries deliveries, recorded
-- by the dead-letter queue's consumer (this Worker) for inspection. Keyed by
-- message id, so a redelivered dead letter is recorded once.
CREATE TABLE IF NOT EXISTS dead_letters (
  message_id  TEXT PRIMARY KEY,
  queue       TEXT NOT NULL,
  event_type  TEXT,               -- NULL when the body is not a decodable event
  body        TEXT NOT NULL,      -- truncated to 2,000 chars
  received_at TEXT NOT NULL
);

-- Hot query (GET /v1/system/dead-letters): ORDER BY received_at DESC LIMIT ? OFFSET ?
CREATE INDEX IF NOT EXISTS idx_dead_letters_received ON dead_letters (received_at DESC);
