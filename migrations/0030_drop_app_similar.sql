-- app_similar held the "similar apps" edges of store pages, a row an edge
-- (three a new app). Nothing reads it: an app's shelf is its record's
-- similar_app_ids, and the save stopped writing edges (0028). At 1.1M apps
-- the table held ~2.8M rows of storage for no reader.
DROP TABLE IF EXISTS app_similar;
