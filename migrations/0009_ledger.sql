-- The run history: facts replicated from each Durable Object's own ledger
-- (durable/ledger). The writer's UUID is the key, so a redelivered batch
-- inserts nothing (INSERT ... ON CONFLICT (id) DO NOTHING).
CREATE TABLE IF NOT EXISTS facts (
  id          TEXT PRIMARY KEY,              -- UUID from the writer
  source      TEXT NOT NULL,                 -- 'controller:main', 'scheduler:v1', 'limiter:<key>'
  kind        TEXT NOT NULL,                 -- 'controller.tick', 'scheduler.task_run', 'limiter.minute', ...
  at          INTEGER NOT NULL,              -- unix ms, the writer's clock
  counters    TEXT NOT NULL DEFAULT '{}',    -- JSON: deltas of the writer's lifetime counters
  data        TEXT NOT NULL DEFAULT '{}',    -- JSON: what else the fact says
  received_at INTEGER NOT NULL               -- unix ms the consumer stored it
) WITHOUT ROWID;

-- Hot query: /v1/history and the dashboard
--   SELECT ... FROM facts WHERE source = ? AND at >= ? ORDER BY at
--   SELECT ... FROM facts WHERE source >= 'limiter:' AND source < 'limiter;' AND at >= ?
CREATE INDEX IF NOT EXISTS idx_facts_source_at ON facts (source, at);

-- fact_totals: per writer, the sum of each counter over its facts in D1, and
-- the fact count ('_facts'). Kept by the trigger below in the same statement
-- as the insert, and only for rows actually inserted (a conflicting,
-- ignored insert fires no trigger), so reconciliation reads a handful of
-- rows instead of summing every fact.
-- Hot query: reconciliation
--   SELECT counter, total FROM fact_totals WHERE source = ?   (primary key)
CREATE TABLE IF NOT EXISTS fact_totals (
  source  TEXT NOT NULL,
  counter TEXT NOT NULL,
  total   INTEGER NOT NULL,
  PRIMARY KEY (source, counter)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS facts_add_totals AFTER INSERT ON facts
BEGIN
  INSERT INTO fact_totals (source, counter, total) VALUES (NEW.source, '_facts', 1)
    ON CONFLICT (source, counter) DO UPDATE SET total = total + 1;
  INSERT INTO fact_totals (source, counter, total)
    SELECT NEW.source, key, value FROM json_each(NEW.counters) WHERE type = 'integer'
    ON CONFLICT (source, counter) DO UPDATE SET total = total + excluded.total;
END;

-- pipeline_counters: the dashboard's counts (apps known / enriched /
-- pending, clusters, opportunities), kept by triggers so a view reads five
-- rows instead of COUNT(*) over 100,000s.
-- Hot query: SELECT name, n FROM pipeline_counters   (five rows)
CREATE TABLE IF NOT EXISTS pipeline_counters (
  name TEXT PRIMARY KEY,
  n    INTEGER NOT NULL
) WITHOUT ROWID;

INSERT OR IGNORE INTO pipeline_counters (name, n)
  SELECT 'apps_known', COUNT(*) FROM app_registry;
INSERT OR IGNORE INTO pipeline_counters (name, n)
  SELECT 'apps_pending', COUNT(*) FROM app_registry WHERE enriched_at IS NULL;
INSERT OR IGNORE INTO pipeline_counters (name, n)
  SELECT 'apps_enriched', COUNT(*) FROM app_registry WHERE enriched_at IS NOT NULL AND enrichment_source = 'itunes+store';
INSERT OR IGNORE INTO pipeline_counters (name, n)
  SELECT 'clusters', COUNT(*) FROM market_clusters;
INSERT OR IGNORE INTO pipeline_counters (name, n)
  SELECT 'opportunities', COUNT(*) FROM opportunity_scores;

CREATE TRIGGER IF NOT EXISTS apps_known_add AFTER INSERT ON app_registry
BEGIN
  UPDATE pipeline_counters SET n = n + 1 WHERE name = 'apps_known';
  UPDATE pipeline_counters SET n = n + (NEW.enriched_at IS NULL) WHERE name = 'apps_pending';
  UPDATE pipeline_counters SET n = n + (NEW.enriched_at IS NOT NULL AND NEW.enrichment_source IS 'itunes+store') WHERE name = 'apps_enriched';
END;

CREATE TRIGGER IF NOT EXISTS apps_known_remove AFTER DELETE ON app_registry
BEGIN
  UPDATE pipeline_counters SET n = n - 1 WHERE name = 'apps_known';
  UPDATE pipeline_counters SET n = n - (OLD.enriched_at IS NULL) WHERE name = 'apps_pending';
  UPDATE pipeline_counters SET n = n - (OLD.enriched_at IS NOT NULL AND OLD.enrichment_source IS 'itunes+store') WHERE name = 'apps_enriched';
END;

CREATE TRIGGER IF NOT EXISTS apps_state_change AFTER UPDATE OF enriched_at, enrichment_source ON app_registry
BEGIN
  UPDATE pipeline_counters SET n = n + (NEW.enriched_at IS NULL) - (OLD.enriched_at IS NULL) WHERE name = 'apps_pending';
  UPDATE pipeline_counters
    SET n = n + (NEW.enriched_at IS NOT NULL AND NEW.enrichment_source IS 'itunes+store')
              - (OLD.enriched_at IS NOT NULL AND OLD.enrichment_source IS 'itunes+store')
    WHERE name = 'apps_enriched';
END;

CREATE TRIGGER IF NOT EXISTS clusters_add AFTER INSERT ON market_clusters
BEGIN
  UPDATE pipeline_counters SET n = n + 1 WHERE name = 'clusters';
END;
CREATE TRIGGER IF NOT EXISTS clusters_remove AFTER DELETE ON market_clusters
BEGIN
  UPDATE pipeline_counters SET n = n - 1 WHERE name = 'clusters';
END;
CREATE TRIGGER IF NOT EXISTS opportunities_add AFTER INSERT ON opportunity_scores
BEGIN
  UPDATE pipeline_counters SET n = n + 1 WHERE name = 'opportunities';
END;
CREATE TRIGGER IF NOT EXISTS opportunities_remove AFTER DELETE ON opportunity_scores
BEGIN
  UPDATE pipeline_counters SET n = n - 1 WHERE name = 'opportunities';
END;
