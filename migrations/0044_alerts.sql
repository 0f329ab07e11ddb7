-- Watchlists and alerts (worker/alerts): what a user watches, the rules
-- that turn the crawl's changes into alerts, the alerts with their
-- delivery attempts, and the evaluation's cursor.

-- A watched app (target: its track id), keyword or segment. A keyword
-- watch keeps the ranks of the keyword's last search it evaluated
-- (searched_at, ranks), so the next search is compared with them.
CREATE TABLE IF NOT EXISTS alert_watches (
  id          INTEGER PRIMARY KEY,
  kind        TEXT NOT NULL CHECK (kind IN ('app', 'keyword', 'segment')),
  target      TEXT NOT NULL,
  created_at  TEXT NOT NULL,              -- d1.Layout
  created_ms  INTEGER NOT NULL,           -- ms since the Unix epoch: no change before it alerts
  searched_at TEXT,                       -- keyword: crawl_keywords.searched_at of the ranks kept
  ranks       TEXT,                       -- keyword: JSON [[track id, rank], ...], the top alerts.TrackedRanks
  UNIQUE (kind, target)
);

-- A rule: a type with its thresholds (params), the watch it is limited to
-- (NULL: every watch of its kind), where its alerts go, and the storm
-- bound's count for the current hour.
CREATE TABLE IF NOT EXISTS alert_rules (
  id              INTEGER PRIMARY KEY,
  type            TEXT NOT NULL,
  watch_id        INTEGER,
  params          TEXT NOT NULL DEFAULT '{}', -- JSON: the type's thresholds
  channel         TEXT NOT NULL CHECK (channel IN ('slack', 'webhook')),
  url             TEXT NOT NULL,
  secret          TEXT NOT NULL,              -- HMAC-SHA256 key of the signature header
  created_at      TEXT NOT NULL,
  hour            INTEGER NOT NULL DEFAULT 0, -- hours since the Unix epoch the counts are of
  hour_sent       INTEGER NOT NULL DEFAULT 0, -- alerts made that hour (a summary included)
  hour_suppressed INTEGER NOT NULL DEFAULT 0  -- alerts held back that hour by the storm bound
);
CREATE INDEX IF NOT EXISTS idx_alert_rules_watch ON alert_rules (watch_id) WHERE watch_id IS NOT NULL;

-- An alert and its delivery: state pending → delivered | failed, each
-- attempt in deliveries (JSON [{at, status, error}]). dedup keys an alert
-- that a later run could make again (a review surge still in its window).
CREATE TABLE IF NOT EXISTS alerts (
  id           INTEGER PRIMARY KEY,
  rule_id      INTEGER NOT NULL,
  watch_id     INTEGER,
  type         TEXT NOT NULL,
  payload      TEXT NOT NULL,              -- JSON: what the webhook receives
  created_at   TEXT NOT NULL,
  state        TEXT NOT NULL DEFAULT 'pending',
  attempts     INTEGER NOT NULL DEFAULT 0,
  deliveries   TEXT NOT NULL DEFAULT '[]',
  delivered_at TEXT,
  dedup        TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS idx_alerts_dedup ON alerts (dedup) WHERE dedup IS NOT NULL;
-- Pending alerts, oldest first: an evaluation sends again those whose
-- queue message was lost.
CREATE INDEX IF NOT EXISTS idx_alerts_pending ON alerts (created_at) WHERE state = 'pending';

-- The evaluation's cursor: history rows up to evaluated_to (ms) are done.
CREATE TABLE IF NOT EXISTS alert_cursor (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  evaluated_to INTEGER NOT NULL,
  updated_at   TEXT
);
INSERT OR IGNORE INTO alert_cursor (id, evaluated_to) VALUES (1, 0);
