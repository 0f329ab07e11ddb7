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
