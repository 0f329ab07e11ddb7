-- app_reviews keyed by the review id alone: a WITHOUT ROWID table is its
-- primary key's b-tree, so the id's separate index (sqlite_autoindex,
-- the rowid table's UNIQUE on a TEXT key) goes. D1 bills a row written
-- and an entry in each index the write touches: a review stored or
-- deleted was its row and two entries (the id's, app_reviews_by_app), now
-- its row and one; and each review is stored once, not twice (its id in
-- the index beside the row). reviews-refresh deletes an app's reviews
-- past its newest reviews.KeptPerApp (worker/reviews), so at its bound a
-- fetch of new reviews deletes as many as it stores.
CREATE TABLE app_reviews_new (
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
  fetched_at  TEXT NOT NULL    -- d1.Layout: when the stored text was fetched
) WITHOUT ROWID;

INSERT INTO app_reviews_new (id, app_id, country, rating, title, body, truncated, version, author_hash, reviewed_at, sentiment, fetched_at)
  SELECT id, app_id, country, rating, title, body, truncated, version, author_hash, reviewed_at, sentiment, fetched_at FROM app_reviews;

DROP TABLE app_reviews;
ALTER TABLE app_reviews_new RENAME TO app_reviews;

-- GET /v1/apps/{id}/reviews pages an app's reviews most recent first; the
-- prune walks an app's past its kept newest.
CREATE INDEX IF NOT EXISTS app_reviews_by_app ON app_reviews (app_id, reviewed_at DESC, id);
