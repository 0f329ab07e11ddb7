-- Keyword rank history as changes: a row when an app's rank for a keyword
-- changed, when it entered the keyword's results, or (rank NULL) when it
-- left them, on the UTC day of the search that saw it (the day's last
-- change). Readers carry a row's rank forward until the keyword's next row
-- for the app. Written daily, a keyword re-searched with its results
-- unchanged cost a row for every result; now it costs none.
-- crawl_rankings keeps the latest rank, which the search compares against.
CREATE TABLE IF NOT EXISTS keyword_rank_changes (
  track_id INTEGER NOT NULL,
  keyword  TEXT NOT NULL,
  day      TEXT NOT NULL,        -- 'YYYY-MM-DD' (UTC)
  rank     INTEGER,              -- NULL: left the keyword's results that day
  PRIMARY KEY (track_id, day, keyword) -- an app's days in order: the API's range and the prune's
) WITHOUT ROWID;

-- The daily rows kept as changes: a day whose rank is the app's previous
-- one for the keyword is dropped.
INSERT OR IGNORE INTO keyword_rank_changes (track_id, keyword, day, rank)
  SELECT track_id, keyword, day, rank FROM (
    SELECT track_id, keyword, day, rank,
      lag(rank) OVER (PARTITION BY track_id, keyword ORDER BY day) AS prev,
      row_number() OVER (PARTITION BY track_id, keyword ORDER BY day) AS n
    FROM keyword_rank_history)
  WHERE n = 1 OR prev IS NOT rank;

-- An app whose last daily row ranks it for a keyword that no longer lists
-- it (not in crawl_rankings) left on or before the keyword's last search:
-- it is marked as left that day, so readers do not carry its rank on.
INSERT OR IGNORE INTO keyword_rank_changes (track_id, keyword, day, rank)
  SELECT h.track_id, h.keyword, substr(k.searched_at, 1, 10), NULL
  FROM (SELECT track_id, keyword, max(day) AS day FROM keyword_rank_history GROUP BY track_id, keyword) h
  JOIN crawl_keywords k ON k.keyword = h.keyword
  WHERE substr(k.searched_at, 1, 10) > h.day
    AND NOT EXISTS (SELECT 1 FROM crawl_rankings r WHERE r.keyword = h.keyword AND r.track_id = h.track_id);

DROP TABLE keyword_rank_history;
ALTER TABLE keyword_rank_changes RENAME TO keyword_rank_history;

-- Ranking fill is incremental: an enriched app is filled once (its
-- keywords handed to the keyword steering, which re-searches them on
-- their market's interval), not again every week. The due apps are the
-- ones never filled, in a partial index that holds only them: an app
-- leaves it when filled, and updates of filled apps touch no entry of it
-- (the index it replaces held every enriched app).
DROP INDEX IF EXISTS idx_app_registry_fill_due;
CREATE INDEX IF NOT EXISTS idx_app_registry_unfilled
  ON app_registry (enriched_at) WHERE enrichment_source = 'itunes+store' AND rankings_filled_at IS NULL;

-- A filled app whose title or subtitle changed has new keywords: it is
-- due for a fill again. Fires only on a change (one row written then).
CREATE TRIGGER IF NOT EXISTS app_registry_refill_on_rename AFTER UPDATE OF name, subtitle ON app_registry
  WHEN new.rankings_filled_at IS NOT NULL AND (old.name IS NOT new.name OR old.subtitle IS NOT new.subtitle)
BEGIN
  UPDATE app_registry SET rankings_filled_at = NULL WHERE track_id = new.track_id;
END;
