-- Market segments (worker/segments): keywords whose top-ranked apps
-- overlap, one community of the keyword graph. A segment keeps its id from
-- run to run (matched by keyword overlap); one no community continues is
-- retired (kept, with its lineage, for history), never deleted.
CREATE TABLE IF NOT EXISTS segments (
  id             INTEGER PRIMARY KEY,
  name           TEXT NOT NULL,
  keyword_count  INTEGER NOT NULL,
  app_count      INTEGER NOT NULL,
  total_ratings  INTEGER NOT NULL,
  avg_rating     REAL NOT NULL,
  demand         REAL NOT NULL,
  hhi            REAL NOT NULL,
  fragmentation  REAL NOT NULL,
  quality_gap    REAL NOT NULL,
  competitiveness REAL,
  opportunity    REAL NOT NULL,
  leaders_velocity_7d  REAL,
  leaders_velocity_30d REAL,
  apps           TEXT NOT NULL,              -- JSON [{track_id, keywords, ratings, share}], leaders first
  relations      TEXT NOT NULL DEFAULT '[]', -- JSON [{segment_id, shared_apps}]
  trend          TEXT NOT NULL DEFAULT 'steady',
  trend_score    REAL NOT NULL DEFAULT 3,
  trend_figures  TEXT,                       -- JSON: the figures behind the trend
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  retired_at     TEXT
);
-- The listings' orders (GET /v1/segments?sort=...), live segments only,
-- each with the id as the cursor's tie-break.
CREATE INDEX IF NOT EXISTS idx_segments_opportunity ON segments (opportunity DESC, id) WHERE retired_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_segments_demand ON segments (demand DESC, id) WHERE retired_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_segments_trend ON segments (trend_score DESC, id) WHERE retired_at IS NULL;

-- Every partitioned keyword: its segment (NULL: in no segment) and the sum
-- of the track ids of its top apps it was partitioned with, so that a
-- search that did not change them marks nothing.
CREATE TABLE IF NOT EXISTS segment_keywords (
  keyword    TEXT PRIMARY KEY,
  segment_id INTEGER,
  top_sum    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_segment_keywords_segment ON segment_keywords (segment_id) WHERE segment_id IS NOT NULL;

-- Keywords whose top apps changed since they were partitioned: what the
-- next incremental run re-partitions around.
CREATE TABLE IF NOT EXISTS segment_dirty (
  keyword   TEXT PRIMARY KEY,
  marked_at TEXT NOT NULL
) WITHOUT ROWID;

-- Splits and merges: keywords of parent_id went to child_id.
CREATE TABLE IF NOT EXISTS segment_lineage (
  child_id  INTEGER NOT NULL,
  parent_id INTEGER NOT NULL,
  kind      TEXT NOT NULL,    -- 'split' | 'merge'
  keywords  INTEGER NOT NULL,
  at        TEXT NOT NULL,
  PRIMARY KEY (child_id, parent_id, at)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_segment_lineage_parent ON segment_lineage (parent_id);

-- One row a live segment a day: what its 7- and 30-day trends read.
CREATE TABLE IF NOT EXISTS segment_snapshots (
  segment_id    INTEGER NOT NULL,
  day           TEXT NOT NULL,   -- YYYY-MM-DD
  keyword_count INTEGER NOT NULL,
  total_ratings INTEGER NOT NULL,
  demand        REAL NOT NULL,
  opportunity   REAL NOT NULL,
  leaders_velocity_7d REAL,
  apps          TEXT NOT NULL,   -- JSON array of the segment's track ids
  PRIMARY KEY (segment_id, day)
) WITHOUT ROWID;
