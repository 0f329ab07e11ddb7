-- Crawl priorities follow the segments (docs/markets.md): the apps and
-- keywords of the top segments by opportunity, as the segments-focus task
-- last chose them. Each set is bounded (segments.MaxFocusApps,
-- MaxFocusKeywords), so its reads never grow with the catalogue. The
-- catalogue sweep reads an app's row by its key to tier it hot; the
-- keyword steering reads a keyword's to value and schedule it first.
CREATE TABLE IF NOT EXISTS segment_focus_apps (
  track_id   INTEGER PRIMARY KEY,
  segment_id INTEGER NOT NULL,
  since      TEXT NOT NULL      -- d1.Layout: when it entered the set
);
CREATE TABLE IF NOT EXISTS segment_focus_keywords (
  keyword    TEXT PRIMARY KEY,
  segment_id INTEGER NOT NULL,
  since      TEXT NOT NULL
) WITHOUT ROWID;
