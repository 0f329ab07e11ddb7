//go:build js && wasm

package worker

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall/js"
	"time"

	"github.com/syumai/workers/cloudflare"
	sd1 "github.com/syumai/workers/cloudflare/d1"

	"storecrawl/worker/cf"
	"storecrawl/worker/d1"
)

// Binding names from wrangler.jsonc.
const (
	bindingDB         = "DB"
	bindingHTML       = "HTML_CACHE"
	bindingKV         = "CACHE"
	bindingEvents     = "EVENTS"
	bindingController = "ENRICHMENT_CONTROLLER"
	bindingLimiter    = "OMNI_LIMITER"
	bindingScheduler  = "SCHEDULER"
	// schedulerName is the versioned singleton (a new version starts afresh).
	schedulerName = "v1"
	// limiterPrefix names one OmniLimiter object per key; a regional
	// deployment can prefix the region as well (idFromName(region + key)).
	limiterPrefix = "limiter_"
	// controllerName addresses the singleton for the default crawl target.
	controllerName = "main"
	// cronRunsKey holds the last run of every cron expression.
	cronRunsKey = "system:cron_runs"
	// maxBatchStatements is D1's limit of statements per batch.
	maxBatchStatements = 100
)

// Platform implements the Worker's interfaces on Cloudflare bindings. The
// bindings are read from the current call's env each time, because one Go
// instance serves the Worker and every Durable Object in the isolate.
type Platform struct{}

// db opens database/sql over the D1 binding.
func (Platform) db() (*sql.DB, error) {
	c, err := sd1.OpenConnector(bindingDB)
	if err != nil {
		return nil, fmt.Errorf("D1 binding %s: %w", bindingDB, err)
	}
	return sql.OpenDB(c), nil
}

// exec runs statements as one D1 batch (one implicit transaction), in chunks
// of D1's per-batch statement limit.
func (p Platform) exec(stmts []d1.Stmt) error {
	return p.execCtx(context.Background(), stmts)
}

// execCtx is exec, counting D1's reported rows against ctx's D1Cost.
func (p Platform) execCtx(ctx context.Context, stmts []d1.Stmt) error {
	_, err := p.execReturning(ctx, stmts)
	return err
}

// execReturning is execCtx, also counting the rows the statements
// returned (an INSERT ... RETURNING returns the rows it inserted; D1's
// meta.changes would count the rows its triggers wrote too).
func (Platform) execReturning(ctx context.Context, stmts []d1.Stmt) (int64, error) {
	var changes int64
	db := cloudflare.GetBinding(bindingDB)
	if db.IsUndefined() {
		return 0, fmt.Errorf("D1 binding %s missing", bindingDB)
	}
	for i := 0; i < len(stmts); i += maxBatchStatements {
		chunk := stmts[i:min(i+maxBatchStatements, len(stmts))]
		arr := js.Global().Get("Array").New()
		for _, s := range chunk {
			args := make([]any, len(s.Args))
			for j, a := range s.Args {
				args[j] = jsValue(a)
			}
			prepared, err := cf.Call(db, "prepare", s.SQL)
			if err != nil {
				return changes, err
			}
			bound, err := cf.Call(prepared, "bind", args...)
			if err != nil {
				return changes, err
			}
			arr.Call("push", bound)
		}
		p, err := cf.Call(db, "batch", arr)
		if err != nil {
			return changes, err
		}
		results, err := cf.Await(p)
		if err != nil {
			return changes, err
		}
		for i := 0; i < results.Length(); i++ {
			meta := results.Index(i).Get("meta")
			addD1Cost(ctx, metaInt(meta, "rows_read"), metaInt(meta, "rows_written"))
			if rows := results.Index(i).Get("results"); rows.Type() == js.TypeObject {
				changes += int64(rows.Length())
			}
		}
	}
	return changes, nil
}

func metaInt(meta js.Value, key string) int64 {
	if meta.Type() != js.TypeObject {
		return 0
	}
	v := meta.Get(key)
	if v.Type() != js.TypeNumber {
		return 0
	}
	return int64(v.Float())
}

// queryAll runs one read with D1's all(), counting its reported rows
// against ctx's D1Cost, and returns the rows as JS objects.
func queryAll(ctx context.Context, q string, args ...any) ([]js.Value, error) {
	db := cloudflare.GetBinding(bindingDB)
	if db.IsUndefined() {
		return nil, fmt.Errorf("D1 binding %s missing", bindingDB)
	}
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = jsValue(a)
	}
	prepared, err := cf.Call(db, "prepare", q)
	if err != nil {
		return nil, err
	}
	bound, err := cf.Call(prepared, "bind", vals...)
	if err != nil {
		return nil, err
	}
	p, err := cf.Call(bound, "all")
	if err != nil {
		return nil, err
	}
	res, err := cf.Await(p)
	if err != nil {
		return nil, err
	}
	meta := res.Get("meta")
	addD1Cost(ctx, metaInt(meta, "rows_read"), metaInt(meta, "rows_written"))
	rows := res.Get("results")
	out := make([]js.Value, rows.Length())
	for i := range out {
		out[i] = rows.Index(i)
	}
	return out, nil
}

// jsValue converts a statement argument to what D1's bind accepts.
func jsValue(a any) any {
	switch v := a.(type) {
	case nil:
		return js.Null()
	case int64:
		return float64(v) // D1 binds JS numbers; track ids fit in 2^53
	case int:
		return float64(v)
	default:
		return v
	}
}

// --- Analyzer -------------------------------------------------------------

func (p Platform) ScoreInputs(ctx context.Context, ids []int64) ([]ScoreInput, error) {
	db, err := p.db()
	if err != nil {
		return nil, err
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	q := ScoreInputsSQL(len(ids))
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ScoreInput
	for rows.Next() {
		var id, avg, count float64
		var updated string
		if err := rows.Scan(&id, &avg, &count, &updated); err != nil {
			return nil, err
		}
		out = append(out, ScoreInput{TrackID: int64(id), AverageRating: avg, RatingCount: int64(count), CurrentVersionReleaseDate: updated})
	}
	return out, rows.Err()
}

func (p Platform) SaveAppScores(_ context.Context, scores map[int64]AppScores, at time.Time) error {
	stmts := make([]d1.Stmt, 0, len(scores))
	now := at.UTC().Format("2006-01-02T15:04:05.000Z")
	for id, s := range scores {
		stmts = append(stmts, d1.Stmt{
			SQL:  `UPDATE app_registry SET demand_score = ?, competitiveness_score = ?, analyzed_at = ? WHERE track_id = ?`,
			Args: []any{s.Demand, s.Competitiveness, now, id},
		})
	}
	return p.exec(stmts)
}

// --- AppReader ------------------------------------------------------------

func (p Platform) App(ctx context.Context, id int64) (json.RawMessage, error) {
	db, err := p.db()
	if err != nil {
		return nil, err
	}
	var rec string
	err = db.QueryRowContext(ctx, appJSONSQL, id).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return json.RawMessage(rec), nil
}

// --- LimiterCaller --------------------------------------------------------

// CallLimiter reaches the key's own OmniLimiter object, so keys scale with
// objects and one hot key cannot slow another.
func (Platform) CallLimiter(_ context.Context, key, method, path string, body []byte) (int, []byte, error) {
	ns := cloudflare.GetBinding(bindingLimiter)
	if ns.IsUndefined() {
		return 0, nil, fmt.Errorf("durable object binding %s missing", bindingLimiter)
	}
	id, err := cf.Call(ns, "idFromName", limiterPrefix+key)
	if err != nil {
		return 0, nil, err
	}
	stub, err := cf.Call(ns, "get", id)
	if err != nil {
		return 0, nil, err
	}
	// RPC, not fetch: no Request/Response objects on the limiter's hot path.
	p, err := cf.Call(stub, "call", method, path, string(body))
	if err != nil {
		return 0, nil, err
	}
	out, err := cf.Await(p)
	if err != nil {
		return 0, nil, err
	}
	return out.Get("status").Int(), []byte(out.Get("json").String()), nil
}

// --- ControllerCaller -----------------------------------------------------

// CallController reaches the EnrichmentController singleton, created near the
// upstream (location hint) on first use.
func (Platform) CallController(_ context.Context, method, path string, body []byte) (int, []byte, error) {
	return callDO(bindingController, controllerName, cloudflare.Getenv("ENRICHMENT_LOCATION_HINT"), method, path, body)
}

// callDO sends one request to the named object of a Durable Object binding.
func callDO(bindingName, objectName, locationHint, method, path string, body []byte) (int, []byte, error) {
	ns := cloudflare.GetBinding(bindingName)
	if ns.IsUndefined() {
		return 0, nil, fmt.Errorf("durable object binding %s missing", bindingName)
	}
	id, err := cf.Call(ns, "idFromName", objectName)
	if err != nil {
		return 0, nil, err
	}
	opts := cf.Object(map[string]any{})
	if locationHint != "" {
		opts.Set("locationHint", locationHint)
	}
	stub, err := cf.Call(ns, "get", id, opts)
	if err != nil {
		return 0, nil, err
	}
	init := cf.Object(map[string]any{"method": method})
	if body != nil {
		init.Set("body", string(body))
		init.Set("headers", cf.Object(map[string]any{"content-type": "application/json"}))
	}
	p, err := cf.Call(stub, "fetch", "https://"+strings.ToLower(bindingName)+".internal"+path, init)
	if err != nil {
		return 0, nil, err
	}
	resp, err := cf.Await(p)
	if err != nil {
		return 0, nil, err
	}
	textP, err := cf.Call(resp, "text")
	if err != nil {
		return 0, nil, err
	}
	text, err := cf.Await(textP)
	if err != nil {
		return 0, nil, err
	}
	return resp.Get("status").Int(), []byte(text.String()), nil
}
