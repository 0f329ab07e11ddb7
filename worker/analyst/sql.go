package analyst

// The analyst's SQL: the brief's steps (analyst.go) and the store's reads
// (store.go, input.go) run these.

// briefCostSQL keeps a brief's cost the sum of its settled and lost calls.
const briefCostSQL = `cost_micro_usd = (SELECT COALESCE(SUM(cost_micro_usd), 0) FROM llm_spend WHERE brief_id = analyst_briefs.brief_id AND state != 'reserved')`

// callTokensSQL adds a call's reported tokens to its brief.
const callTokensSQL = `prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?`

// storeInputSQL stores a brief's input and first prompt (queued → ready).
const storeInputSQL = `UPDATE analyst_briefs SET state = 'ready', attempt = 1, input_json = ?, prompt_hash = ?,
  messages_json = ?, prompt_version = ?, model = ?, updated_at = ? WHERE brief_id = ? AND state = 'queued'`

// failBriefSQL records a brief as failed before any answer.
const failBriefSQL = `UPDATE analyst_briefs SET state = 'failed', error = ?, updated_at = ?, finished_at = ? WHERE brief_id = ?`

// lostCallHeldSQL reads what a lost call holds reserved.
const lostCallHeldSQL = `SELECT reserved_micro_usd FROM llm_spend WHERE call_id = ? AND state = 'reserved'`

// chargeLostCallSQL charges a lost call at its worst case.
const chargeLostCallSQL = `UPDATE llm_spend SET state = 'lost', outcome = 'lost', cost_micro_usd = reserved_micro_usd, settled_at = ?
WHERE call_id = ? AND state = 'reserved'`

// readyAfterLostSQL makes a brief whose call was lost ready for another.
const readyAfterLostSQL = `UPDATE analyst_briefs SET state = 'ready', error = ?, ` + briefCostSQL + `, updated_at = ?
WHERE brief_id = ? AND state = 'calling' AND calls = ?`

// reserveCallSQL inserts a call's reservation only if the day's spend, every
// reservation and this call's worst case stay within the cap.
const reserveCallSQL = `INSERT INTO llm_spend (call_id, day, cluster_id, brief_id, state, est_tokens, reserved_micro_usd, created_at)
SELECT ?, ?, ?, ?, 'reserved', ?, ?, ? WHERE (` + heldSQL + `) + ? <= ? RETURNING call_id`

// startCallingSQL moves a brief to calling, only if its reservation was inserted.
const startCallingSQL = `UPDATE analyst_briefs SET state = 'calling', calls = ?, updated_at = ?
WHERE brief_id = ? AND state = 'ready' AND calls = ? AND EXISTS (SELECT 1 FROM llm_spend WHERE call_id = ?)`

// releaseCallSQL releases the reservation of a call never sent.
const releaseCallSQL = `DELETE FROM llm_spend WHERE call_id = ? AND state = 'reserved'`

// readyAfterUnsentSQL makes a brief whose call was never sent ready again.
const readyAfterUnsentSQL = `UPDATE analyst_briefs SET state = 'ready', calls = ?, updated_at = ? WHERE brief_id = ? AND state = 'calling' AND calls = ?`

// readyAfterErrorSQL makes a brief whose call failed ready again.
const readyAfterErrorSQL = `UPDATE analyst_briefs SET state = 'ready', error = ?, ` + briefCostSQL + `, updated_at = ? WHERE brief_id = ? AND state = 'calling' AND calls = ?`

// briefDoneSQL stores a valid answer (calling → done).
const briefDoneSQL = `UPDATE analyst_briefs SET state = 'done', answer = ?, brief_json = ?, headline = ?, confidence = ?, error = NULL, ` + callTokensSQL + `, ` + briefCostSQL + `, updated_at = ?, finished_at = ? WHERE brief_id = ? AND state = 'calling' AND calls = ?`

// briefRetrySQL stores an invalid answer and the retry's prompt (calling → ready).
const briefRetrySQL = `UPDATE analyst_briefs SET state = 'ready', attempt = attempt + 1, messages_json = ?, answer = ?, error = ?, ` + callTokensSQL + `, ` + briefCostSQL + `, updated_at = ? WHERE brief_id = ? AND state = 'calling' AND calls = ?`

// briefFailedSQL stores the last invalid answer (calling → failed).
const briefFailedSQL = `UPDATE analyst_briefs SET state = 'failed', answer = ?, error = ?, ` + callTokensSQL + `, ` + briefCostSQL + `, updated_at = ?, finished_at = ? WHERE brief_id = ? AND state = 'calling' AND calls = ?`

// settleCallSQL charges a call at its reported usage.
const settleCallSQL = `UPDATE llm_spend SET state = 'settled', prompt_tokens = ?, completion_tokens = ?, cost_micro_usd = ?, outcome = ?, settled_at = ?
WHERE call_id = ? AND state = 'reserved'`
