-- Crawl steering: the enrichment pick serves queued apps by
-- priority, then by how many ratings their lookup (or a search) showed, so
-- among equals the apps that matter most are enriched first; an app with
-- no known count (NULL: sorts last in DESC order) comes after every known
-- one. The partial index keeps the pick reading exactly the rows it
-- returns; it replaces idx_app_registry_queue (priority, track id).
DROP INDEX IF EXISTS idx_app_registry_queue;
CREATE INDEX IF NOT EXISTS idx_app_registry_queue_value
  ON app_registry (enrich_priority DESC, rating_count DESC, track_id) WHERE enriched_at IS NULL;
