-- Market clusters: the apps ranking for one keyword (worker/markets.go).
CREATE TABLE IF NOT EXISTS market_clusters (
  cluster_id    TEXT PRIMARY KEY,   -- the keyword
  app_count     INTEGER NOT NULL,
  total_ratings INTEGER NOT NULL,
  avg_rating    REAL,
  top_share     REAL,               -- the leader's share of ratings
  computed_at   TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS market_cluster_members (
  cluster_id TEXT NOT NULL,
  track_id   INTEGER NOT NULL,
  position   INTEGER NOT NULL,
  PRIMARY KEY (cluster_id, track_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS opportunity_scores (
  cluster_id    TEXT PRIMARY KEY,
  score         REAL NOT NULL,      -- 0–100
  demand        REAL,
  fragmentation REAL,
  quality_gap   REAL,
  computed_at   TEXT NOT NULL
);

-- Hot query (GET /v1/opportunities, /v1/clusters): ORDER BY score DESC LIMIT ? OFFSET ?
CREATE INDEX IF NOT EXISTS idx_opportunity_scores_score ON opportunity_scores (score DESC);

-- Hot query (GET /v1/clusters): ORDER BY total_ratings DESC LIMIT ? OFFSET ?
CREATE INDEX IF NOT EXISTS idx_market_clusters_size ON market_clusters (total_ratings DESC);
