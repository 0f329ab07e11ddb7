-- A new keyword writes what it must: D1 bills every row and index entry
-- written, and a new keyword's first search and first clustering were
-- the fill month's biggest writer (docs/scale.md). Two copies of its
-- results go:
--
-- * A market's members were a copy of its keyword's rankings (the apps at
--   their search ranks): a row and an idx_market_cluster_members_track
--   entry a member, and a row again whenever a rank moved. The members
--   are now read from crawl_rankings (keyword = cluster_id, position =
--   rank); the readers by app (an app's markets: the catalogue sweep's
--   cluster score, the keyword values of the ranking fill and of derived
--   keywords, the history API's first ranks) read it by track id, from
--   the index below: one entry a new ranking, none when a rank moves
--   (rank is in no index).
-- * A keyword's first rank of an app is implicit (see worker/catalogue's
--   rankChangesSQL): the ranking row holds it and when it was taken
--   (seen_at); keyword_rank_history gets it when it changes (written
--   before the new value), so a series with rows holds its first value.
CREATE INDEX IF NOT EXISTS idx_crawl_rankings_track ON crawl_rankings (track_id);

-- The sum of the members' track ids when the cluster was measured: with
-- app_count, what the clustering cron compares with the keyword's
-- rankings to find a market whose members changed and whose stats were
-- not re-measured (a rankings-updated message lost).
ALTER TABLE market_clusters ADD COLUMN member_sum INTEGER;
UPDATE market_clusters SET member_sum = (SELECT sum(track_id) FROM market_cluster_members m WHERE m.cluster_id = market_clusters.cluster_id);

DROP TABLE IF EXISTS market_cluster_members;
