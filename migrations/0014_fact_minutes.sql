-- Per-minute rollups of the facts /v1/history reads, so
-- it reads one row per writer per minute instead of every fact, and raw
-- facts can be pruned (FACTS_RETENTION_DAYS, the facts-prune task).
--
-- One row per writer per minute, of the two kinds history reads: a crawl
-- target's controller.tick facts and a limiter key's limiter.minute facts
-- (a writer writes one of the two, so the source names the kind). The
-- minute is the fact's own `at` rounded down, as history bucketed it.
--
-- Kept by the trigger below in the same statement as the fact insert, and
-- only for rows actually inserted (a redelivered fact conflicts, inserts
-- nothing and fires nothing), as fact_totals is: a redelivery cannot count
-- twice. Reconciliation keeps reading fact_totals, which pruning leaves as
-- it is (no trigger fires on DELETE).
--
-- Hot queries: /v1/history (worker/history/store.go)
--   ... FROM fact_minutes WHERE source = ? AND minute >= ? AND minute <= ?                 (primary key range)
--   ... WHERE source IN (<limiter sources in fact_totals>) AND minute >= ? AND minute <= ? (a primary key range per key)
CREATE TABLE IF NOT EXISTS fact_minutes (
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
  waited       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (source, minute)
) WITHOUT ROWID;

-- The facts already in D1, rolled up once (before the trigger exists, so
-- nothing is counted twice). Bare columns next to the one max() come from
-- the row holding the max (SQLite's documented rule): the latest capacity.
INSERT OR IGNORE INTO fact_minutes (source, minute, ticks, dispatched, completed, failed, rate_limited, item_errors,
  capacity, capacity_at, cooldown_ats, allowed, refused, waited)
SELECT source, at - at % 60000,
  SUM(coalesce(json_extract(counters, '$.ticks'), 0)),
  SUM(coalesce(json_extract(counters, '$.dispatched'), 0)),
  SUM(coalesce(json_extract(counters, '$.completed'), 0)),
  SUM(coalesce(json_extract(counters, '$.failed'), 0)),
  SUM(coalesce(json_extract(counters, '$.rate_limited'), 0)),
  SUM(coalesce(json_extract(counters, '$.item_errors'), 0)),
  CASE WHEN json_type(data, '$.capacity_after') IN ('integer', 'real') THEN json_extract(data, '$.capacity_after') END,
  max(CASE WHEN json_type(data, '$.capacity_after') IN ('integer', 'real') THEN at END),
  json_group_array(at) FILTER (WHERE coalesce(json_extract(counters, '$.cooldowns'), 0) > 0),
  SUM(coalesce(json_extract(counters, '$.allowed'), 0)),
  SUM(coalesce(json_extract(counters, '$.refused'), 0)),
  SUM(coalesce(json_extract(counters, '$.waited'), 0))
FROM facts
WHERE kind = 'controller.tick' OR kind = 'limiter.minute'
GROUP BY source, at - at % 60000;

CREATE TRIGGER IF NOT EXISTS facts_add_minute AFTER INSERT ON facts
WHEN NEW.kind = 'controller.tick' OR NEW.kind = 'limiter.minute'
BEGIN
  INSERT INTO fact_minutes (source, minute, ticks, dispatched, completed, failed, rate_limited, item_errors,
    capacity, capacity_at, cooldown_ats, allowed, refused, waited)
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
    coalesce(json_extract(NEW.counters, '$.waited'), 0))
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
    waited = waited + excluded.waited;
END;
