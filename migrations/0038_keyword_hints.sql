-- keyword_hint_prefixes: keyword sourcing's prefixes (worker/crawl,
-- hints.go). A prefix asked of the search hints keeps when it was asked
-- and how many terms its answer carried, so it rests before it is asked
-- again; a prefix found by expanding a full answer (a term that may hide
-- more completions) waits unasked (asked_at NULL) with its value, read in
-- value order by the partial index. crawl_keywords.source gains 'hints'.
CREATE TABLE IF NOT EXISTS keyword_hint_prefixes (
  prefix   TEXT PRIMARY KEY,
  value    REAL NOT NULL,     -- expected value of asking it
  asked_at TEXT,              -- ISO-8601; NULL = never asked
  terms    INTEGER            -- hints its last answer carried
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS idx_keyword_hint_prefixes_pending
  ON keyword_hint_prefixes (value DESC) WHERE asked_at IS NULL;
