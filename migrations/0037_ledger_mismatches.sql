-- ledger_mismatches: reconciliation's record of the writers whose lifetime
-- counters differed from their facts (durable/ledger.Mismatch). A writer
-- has at most one open mismatch (closed_at NULL), kept with the time a
-- run first saw it across the runs that see it again; a repaired or
-- cleared one keeps its delta, duration and resolution (and the writer's
-- ledger.mismatch fact of a repair) for GET /v1/ledger, for
-- history.MismatchRetention.
CREATE TABLE IF NOT EXISTS ledger_mismatches (
  source TEXT NOT NULL,
  first_seen INTEGER NOT NULL,  -- unix ms
  delta TEXT NOT NULL,          -- JSON: counter -> writer's counter minus its facts
  closed_at INTEGER,            -- unix ms; NULL = open
  duration_ms INTEGER,
  resolution TEXT,              -- 'repaired' | 'cleared'
  fact_id TEXT,
  PRIMARY KEY (source, first_seen)
) WITHOUT ROWID;

-- The open ones, by writer: a run reads those of the writers it compares.
CREATE UNIQUE INDEX IF NOT EXISTS idx_ledger_mismatches_open ON ledger_mismatches (source) WHERE closed_at IS NULL;
-- The closed ones, newest first (/v1/ledger), and the old ones to delete.
CREATE INDEX IF NOT EXISTS idx_ledger_mismatches_closed ON ledger_mismatches (closed_at) WHERE closed_at IS NOT NULL;
