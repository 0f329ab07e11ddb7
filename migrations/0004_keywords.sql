-- Keywords derived from app titles/subtitles, searched to map rankings.
CREATE TABLE IF NOT EXISTS crawl_keywords (
  keyword     TEXT PRIMARY KEY,
  source      TEXT NOT NULL,   -- 'title' | 'subtitle'
  created_at  TEXT NOT NULL,
  searched_at TEXT,            -- NULL = pending
  result_count INTEGER
);

-- Hot query (crawl cycle): pending keywords,
--   WHERE searched_at IS NULL LIMIT ?
CREATE INDEX IF NOT EXISTS idx_crawl_keywords_pending ON crawl_keywords (keyword) WHERE searched_at IS NULL;

-- Where each app ranks for a keyword (the latest search).
CREATE TABLE IF NOT EXISTS crawl_rankings (
  keyword   TEXT NOT NULL,
  track_id  INTEGER NOT NULL,
  rank      INTEGER NOT NULL,
  seen_at   TEXT NOT NULL,
  PRIMARY KEY (keyword, track_id)
) WITHOUT ROWID;
