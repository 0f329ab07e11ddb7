-- Dead letters are replayable in full. The whole body of
-- a dead message goes to R2 (body_r2_key) before its row is written: R2 does
-- not share D1's outages, which are what dead-letters ledger facts, and a
-- D1 row holding 128 KB bodies would make the listing heavy. `body` stays
-- the first 2,000 characters, for reading. POST
-- /v1/system/dead-letters/replay sends the full body back to its queue and
-- stamps replayed_at.
ALTER TABLE dead_letters ADD COLUMN body_r2_key TEXT;   -- NULL: recorded before bodies were kept
ALTER TABLE dead_letters ADD COLUMN body_bytes INTEGER;
ALTER TABLE dead_letters ADD COLUMN replayed_at TEXT;
ALTER TABLE dead_letters ADD COLUMN replays INTEGER NOT NULL DEFAULT 0;

-- The replay's pick: dead letters not yet replayed, oldest first.
CREATE INDEX IF NOT EXISTS idx_dead_letters_unreplayed
  ON dead_letters (received_at) WHERE replayed_at IS NULL;
