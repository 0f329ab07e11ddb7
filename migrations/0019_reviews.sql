-- Customer reviews: the analyst's evidence of what users of the
-- top clusters' apps complain about. One row per Apple review id (ids are
-- global across storefronts), written idempotently by
-- worker/reviews.UpsertStmt: a re-fetched review replaces its row (a
-- reviewer may edit it). The author is a hash (reviews.AuthorHash), never
-- the name; the body is cut to reviews.MaxBodyRunes at parse.
CREATE TABLE IF NOT EXISTS app_reviews (
  id          TEXT PRIMARY KEY,
  app_id      INTEGER NOT NULL,
  country     TEXT NOT NULL,
  rating      INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
  title       TEXT NOT NULL,
  body        TEXT NOT NULL,
  truncated   INTEGER NOT NULL DEFAULT 0,
  version     TEXT NOT NULL,
  author_hash TEXT NOT NULL,
  reviewed_at TEXT,            -- d1.Layout; NULL when the feed gave no date
  sentiment   REAL NOT NULL CHECK (sentiment BETWEEN -1 AND 1),
  fetched_at  TEXT NOT NULL    -- d1.Layout
);

-- GET /v1/apps/{id}/reviews pages an app's reviews most recent first.
CREATE INDEX IF NOT EXISTS app_reviews_by_app ON app_reviews (app_id, reviewed_at DESC, id);
