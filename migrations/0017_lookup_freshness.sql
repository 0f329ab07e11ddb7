-- Lookups that are not needed are not made.
-- lookup_at is when the app's lookup-level fields (name, developer, price,
-- rating, version, description, ...) were last stored from an iTunes
-- lookup or search result. A queued app whose lookup_at is within the
-- controller's LOOKUP_FRESH_H needs only its store page: the pick reads
-- the stored fields instead of asking the API host again.
ALTER TABLE app_registry ADD COLUMN lookup_at TEXT;  -- NULL: never looked up
