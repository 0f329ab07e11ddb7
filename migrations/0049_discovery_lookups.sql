-- Discovery lookups (worker/crawl, discover.go): the apps queued without
-- lookup fields (met by id alone: a page's similar apps, a chart's
-- entries, an operator's seeds), in track id order for the crawl's cursor.
-- An app leaves the index when its lookup fields are kept (lookup_at) or
-- its enrichment settles (enriched_at): the index holds only the work.
CREATE INDEX IF NOT EXISTS idx_app_registry_unlooked
  ON app_registry (track_id) WHERE enriched_at IS NULL AND lookup_at IS NULL;
