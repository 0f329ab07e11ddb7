-- Keyword steering: keywords are searched by expected value,
-- and searched keywords come due again on a schedule set by their market
-- (worker/crawl/steer.go holds the policy; its numbers live in Go).

-- A keyword's expected value (crawl.KeywordValue): its cluster's
-- opportunity score plus its enriched carriers; for a pending keyword, the
-- best score of the deriving apps' clusters, their enriched carriers and
-- the first-search value.
ALTER TABLE crawl_keywords ADD COLUMN value REAL NOT NULL DEFAULT 0;
-- The re-search interval the policy last set (seconds), and when the
-- keyword is next due (its last search plus that interval). NULL for
-- pending keywords (due now).
ALTER TABLE crawl_keywords ADD COLUMN research_interval_s INTEGER;
ALTER TABLE crawl_keywords ADD COLUMN next_search_at TEXT;
-- A searched keyword that came due (the crawl cycle's promote step) holds
-- its value here until it is searched again; NULL: not due.
ALTER TABLE crawl_keywords ADD COLUMN due_value REAL;

-- What is known already: pending keywords get the first-search value
-- (crawl.FirstSearchValue), searched ones the cold schedule
-- (crawl.ColdKeywordResearch, 30 days); the crawl cycle's revalue step
-- reschedules every scored cluster's keyword from the cursor's start.
-- TestMigrationBackfillMatchesPolicy checks these literals against Go.
UPDATE crawl_keywords SET value = 10 WHERE searched_at IS NULL;
UPDATE crawl_keywords SET research_interval_s = 2592000,
  next_search_at = strftime('%Y-%m-%dT%H:%M:%fZ', searched_at, '+2592000 seconds')
  WHERE searched_at IS NOT NULL;

-- The pick reads both sets in value order, LIMIT n each:
--   pending:  WHERE searched_at IS NULL ORDER BY value DESC, created_at
--   due:      WHERE due_value IS NOT NULL ORDER BY due_value DESC, next_search_at
DROP INDEX IF EXISTS idx_crawl_keywords_pending;
CREATE INDEX IF NOT EXISTS idx_crawl_keywords_pending_value
  ON crawl_keywords (value DESC, created_at) WHERE searched_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_crawl_keywords_due_value
  ON crawl_keywords (due_value DESC, next_search_at) WHERE due_value IS NOT NULL;
-- The promote step: searched keywords not yet due, soonest first,
--   WHERE due_value IS NULL AND next_search_at IS NOT NULL AND next_search_at <= ? ORDER BY next_search_at LIMIT ?
CREATE INDEX IF NOT EXISTS idx_crawl_keywords_waiting
  ON crawl_keywords (next_search_at) WHERE due_value IS NULL AND next_search_at IS NOT NULL;
-- The revalue step: clusters scored since its cursor, in (computed_at, cluster_id) order.
CREATE INDEX IF NOT EXISTS idx_opportunity_scores_computed
  ON opportunity_scores (computed_at, cluster_id);
