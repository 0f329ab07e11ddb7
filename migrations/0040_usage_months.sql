-- usage_months: the cost guard's month-to-date usage of the Workers Paid
-- plan's metered products (worker/guard, docs/cost.md), one row per UTC
-- month and source (the invocation kind that spent it: 'cron', 'scheduler',
-- 'queue', 'controller'), each row summed by one upsert per invocation.
-- month '' holds the controller's lifetime totals as last sampled, so the
-- next sample adds only their difference.
CREATE TABLE IF NOT EXISTS usage_months (
  month           TEXT NOT NULL,              -- 'YYYY-MM' (UTC), or '' (last sample)
  source          TEXT NOT NULL,
  d1_rows_read    INTEGER NOT NULL DEFAULT 0,
  d1_rows_written INTEGER NOT NULL DEFAULT 0,
  do_requests     INTEGER NOT NULL DEFAULT 0,
  queue_ops       INTEGER NOT NULL DEFAULT 0,
  r2_class_a      INTEGER NOT NULL DEFAULT 0,
  r2_class_b      INTEGER NOT NULL DEFAULT 0,
  kv_reads        INTEGER NOT NULL DEFAULT 0,
  kv_writes       INTEGER NOT NULL DEFAULT 0,
  workers_requests INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (month, source)
) WITHOUT ROWID;
