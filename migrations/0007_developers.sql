-- Developers seen in lookups and searches (deduplicated before writing).
CREATE TABLE IF NOT EXISTS developers (
  developer_id  INTEGER PRIMARY KEY,
  name          TEXT,
  first_seen_at TEXT NOT NULL,
  updated_at    TEXT NOT NULL
);
