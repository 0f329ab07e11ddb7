-- Segment evaluations (worker/analyst): for the top market segments by
-- opportunity, a few steps under the analyst's daily LLM cap (reference
-- apps, complaint themes, marketing-method fit, a critic, a synthesis).
-- Each step keeps its exact input, prompt hash, tokens and cost; its LLM
-- calls are llm_spend rows (brief_id = eval_id, cluster_id = 'segment:<id>').
CREATE TABLE IF NOT EXISTS segment_evaluations (
  eval_id        TEXT PRIMARY KEY,
  segment_id     INTEGER NOT NULL,
  state          TEXT NOT NULL,              -- open | done | failed
  trigger        TEXT NOT NULL,              -- schedule
  model          TEXT,
  prompt_version TEXT NOT NULL,
  error          TEXT,
  cost_micro_usd INTEGER NOT NULL DEFAULT 0, -- the sum of its steps' settled and lost calls
  created_at     TEXT NOT NULL,              -- d1.Layout
  updated_at     TEXT NOT NULL,
  finished_at    TEXT
);
CREATE INDEX IF NOT EXISTS segment_evaluations_by_segment ON segment_evaluations (segment_id, created_at DESC);
CREATE INDEX IF NOT EXISTS segment_evaluations_open ON segment_evaluations (state, created_at);

-- One row an evaluation's step: 1 reference_apps and 2 complaint_themes
-- (read from D1, no call), 3 methods, 4 critic, 5 synthesis (one LLM call
-- each, retried without paying twice).
CREATE TABLE IF NOT EXISTS segment_evaluation_steps (
  eval_id           TEXT NOT NULL,
  step              INTEGER NOT NULL,
  name              TEXT NOT NULL,
  state             TEXT NOT NULL,              -- pending | ready | calling | done | failed
  attempt           INTEGER NOT NULL DEFAULT 0, -- validation attempt of its answer
  calls             INTEGER NOT NULL DEFAULT 0, -- LLM calls started (each one a llm_spend row)
  input_json        TEXT,                       -- exactly what the step was shown
  prompt_hash       TEXT,                       -- sha256 of the first attempt's messages
  messages_json     TEXT,                       -- the next (or last) call's messages
  answer            TEXT,                       -- the last raw answer
  output_json       TEXT,                       -- the step's validated output
  error             TEXT,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost_micro_usd    INTEGER NOT NULL DEFAULT 0,
  updated_at        TEXT NOT NULL,
  finished_at       TEXT,
  PRIMARY KEY (eval_id, step)
) WITHOUT ROWID;
