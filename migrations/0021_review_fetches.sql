-- Which apps' reviews were fetched when: the reviews-refresh
-- task fetches the customer-reviews feed of the top opportunity clusters'
-- apps, those never fetched or fetched longer ago than its refresh age
-- first. One row per app and storefront, replaced on each fetch.
CREATE TABLE IF NOT EXISTS review_fetches (
  app_id     INTEGER NOT NULL,
  country    TEXT NOT NULL,
  fetched_at TEXT NOT NULL,    -- d1.Layout
  reviews    INTEGER NOT NULL, -- reviews the fetched page held
  PRIMARY KEY (app_id, country)
) WITHOUT ROWID;
