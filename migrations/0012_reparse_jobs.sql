-- Re-parse jobs: POST /v1/enrichment/reparse starts one; the
-- scheduler's page-reparse task walks app_registry in track_id order from
-- cursor, re-running the page parsers over the raw pages kept in R2. The
-- newest unfinished job is the active one.
CREATE TABLE IF NOT EXISTS reparse_jobs (
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
