-- The analyst: an LLM brief per top opportunity cluster, written
-- as resumable steps under the scheduler (the analyst-run task), and the
-- LLM spend ledger that enforces the daily cap.

-- One brief: its state machine and, once gathered, the exact input it saw
-- (input_json: llm.BriefInput as shown; messages_json: the prompt of the
-- current attempt), so a brief is reproducible and auditable. Every step
-- writes its row before the next starts, so a crash resumes, not restarts.
CREATE TABLE IF NOT EXISTS analyst_briefs (
  brief_id          TEXT PRIMARY KEY,
  cluster_id        TEXT NOT NULL,
  state             TEXT NOT NULL,              -- queued | ready | calling | done | failed
  trigger           TEXT NOT NULL,              -- schedule | api
  attempt           INTEGER NOT NULL DEFAULT 0, -- validation attempt (1..llm.MaxAttempts)
  calls             INTEGER NOT NULL DEFAULT 0, -- LLM calls started (each one a llm_spend row)
  prompt_version    TEXT,
  model             TEXT,
  input_json        TEXT,
  prompt_hash       TEXT,                       -- sha256 of the first attempt's messages
  messages_json     TEXT,
  answer            TEXT,                       -- the last raw answer
  brief_json        TEXT,                       -- the validated brief (done)
  headline          TEXT,
  confidence        TEXT,
  error             TEXT,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost_micro_usd    INTEGER NOT NULL DEFAULT 0,
  created_at        TEXT NOT NULL,              -- d1.Layout
  updated_at        TEXT NOT NULL,
  finished_at       TEXT
);
-- GET /v1/opportunities/{id}/brief and the enqueue check: a cluster's newest brief.
CREATE INDEX IF NOT EXISTS analyst_briefs_by_cluster ON analyst_briefs (cluster_id, created_at DESC);
-- The task's work list: open briefs, oldest first.
CREATE INDEX IF NOT EXISTS analyst_briefs_open ON analyst_briefs (state, created_at);

-- The LLM spend ledger: one row per call, inserted (reserved at the call's
-- worst-case cost) before the call only if the day's spend plus every
-- reservation stays within the cap, then settled at the reported usage. A
-- call lost mid-flight (a crash) stays charged at its worst case.
CREATE TABLE IF NOT EXISTS llm_spend (
  call_id            TEXT PRIMARY KEY,          -- brief_id '/' call number
  day                TEXT NOT NULL,             -- UTC day charged (the day the call started)
  cluster_id         TEXT NOT NULL,
  brief_id           TEXT NOT NULL,
  state              TEXT NOT NULL,             -- reserved | settled | lost
  est_tokens         INTEGER NOT NULL,          -- the OmniLimiter cost
  reserved_micro_usd INTEGER NOT NULL,
  prompt_tokens      INTEGER NOT NULL DEFAULT 0,
  completion_tokens  INTEGER NOT NULL DEFAULT 0,
  cost_micro_usd     INTEGER NOT NULL DEFAULT 0,
  outcome            TEXT,                      -- ok | invalid | rate_limited | error | lost
  created_at         TEXT NOT NULL,
  settled_at         TEXT
);
CREATE INDEX IF NOT EXISTS llm_spend_by_day ON llm_spend (day, cluster_id);
CREATE INDEX IF NOT EXISTS llm_spend_by_brief ON llm_spend (brief_id);

-- The analyst's last state (one row): what GET /v1/analyst/status shows.
CREATE TABLE IF NOT EXISTS analyst_status (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  state          TEXT NOT NULL,                 -- idle | working | stopped_at_cap | rate_limited | disabled | error
  message        TEXT NOT NULL,
  stopped_at_cap INTEGER NOT NULL DEFAULT 0,
  updated_at     TEXT NOT NULL
);
