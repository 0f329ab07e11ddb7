-- The crawl cycle's due checks read one row at most only if "never scanned"
-- and "scanned long ago" are one range: index the scan time with NULL
-- (never scanned) as '' so it sorts first. Replaces idx_category_scans_due.
--   WHERE tier = ? AND COALESCE(last_scanned_at, '') < ?  [ORDER BY COALESCE(last_scanned_at, '')] LIMIT 1
DROP INDEX IF EXISTS idx_category_scans_due;
CREATE INDEX IF NOT EXISTS idx_category_scans_due_at ON category_scans (tier, COALESCE(last_scanned_at, ''));
