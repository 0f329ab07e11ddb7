-- Discovery: which store categories exist, how often each is re-scanned,
-- and what the scans found. Tiers trade freshness for cost: high every 7
-- days, medium every 14, low every 30, never-scanned first.
CREATE TABLE IF NOT EXISTS category_scans (
  genre_id        INTEGER PRIMARY KEY,
  name            TEXT NOT NULL,
  tier            TEXT NOT NULL CHECK (tier IN ('high', 'medium', 'low')),
  last_scanned_at TEXT,            -- ISO-8601; NULL = never scanned
  apps_found      INTEGER,
  scans           INTEGER NOT NULL DEFAULT 0
);

-- Hot query (crawl cycle): the most overdue category of a tier,
--   WHERE tier = ? AND (last_scanned_at IS NULL OR last_scanned_at < ?)
--   ORDER BY last_scanned_at IS NOT NULL, last_scanned_at LIMIT 1
CREATE INDEX IF NOT EXISTS idx_category_scans_due ON category_scans (tier, last_scanned_at);

-- Current chart positions (one row per rank) and their history (append-only).
CREATE TABLE IF NOT EXISTS chart_positions (
  country    TEXT NOT NULL,
  collection TEXT NOT NULL,
  genre_id   INTEGER NOT NULL,
  rank       INTEGER NOT NULL,
  track_id   INTEGER NOT NULL,
  seen_at    TEXT NOT NULL,
  PRIMARY KEY (country, collection, genre_id, rank)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS chart_position_history (
  country    TEXT NOT NULL,
  collection TEXT NOT NULL,
  genre_id   INTEGER NOT NULL,
  track_id   INTEGER NOT NULL,
  seen_at    TEXT NOT NULL,
  rank       INTEGER NOT NULL,
  PRIMARY KEY (track_id, country, collection, genre_id, seen_at)
) WITHOUT ROWID;

INSERT OR IGNORE INTO category_scans (genre_id, name, tier) VALUES
  (6014, 'Games', 'high'), (6007, 'Productivity', 'high'), (6013, 'Health & Fitness', 'high'),
  (6015, 'Finance', 'high'), (6017, 'Education', 'high'), (6008, 'Photo & Video', 'high'),
  (6016, 'Entertainment', 'high'), (6012, 'Lifestyle', 'high'),
  (6000, 'Business', 'medium'), (6002, 'Utilities', 'medium'), (6005, 'Social Networking', 'medium'),
  (6011, 'Music', 'medium'), (6024, 'Shopping', 'medium'), (6003, 'Travel', 'medium'),
  (6023, 'Food & Drink', 'medium'), (6020, 'Medical', 'medium'),
  (6001, 'Weather', 'low'), (6004, 'Sports', 'low'), (6006, 'Reference', 'low'),
  (6009, 'News', 'low'), (6010, 'Navigation', 'low'), (6018, 'Books', 'low');
