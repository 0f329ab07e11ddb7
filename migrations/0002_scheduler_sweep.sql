-- Cursor sweeps keep their position in D1 (not in Durable Object storage),
-- so any writer can see and reset it.
CREATE TABLE IF NOT EXISTS sweep_cursors (
  name       TEXT PRIMARY KEY,
  cursor     INTEGER NOT NULL,
  updated_at TEXT
);

-- Rating counts over time, one row per app per sweep (the rating-sweep task).
CREATE TABLE IF NOT EXISTS app_snapshots (
  track_id       INTEGER NOT NULL,
  taken_at       TEXT NOT NULL,
  rating_count   INTEGER,
  average_rating REAL,
  PRIMARY KEY (track_id, taken_at)
) WITHOUT ROWID;

-- Ratings per day between the last two snapshots; NULL = not yet known.
ALTER TABLE app_registry ADD COLUMN rating_velocity REAL;
