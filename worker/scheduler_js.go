//go:build js && wasm

package worker

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall/js"
	"time"

	"github.com/syumai/workers/cloudflare"
	"github.com/syumai/workers/cloudflare/fetch"
	"github.com/syumai/workers/cloudflare/kv"

	"storecrawl/durable/scheduler"
	"storecrawl/worker/enrich"
	"storecrawl/worker/logx"
	"storecrawl/worker/ratelimit"
	"storecrawl/worker/upstream"
)

// schedulerDecide(op, state, argJSON, nowMs) → decision JSON.
func schedulerDecide(args []js.Value) any {
	now := time.UnixMilli(int64(args[3].Float()))
	d := scheduler.Handle(schedulerConfig(), args[0].String(), args[1].String(), []byte(args[2].String()), now)
	emit(d.Events)
	d.Events = nil
	return mustJSON(d)
}

// schedulerRunTask(name) → Promise<result JSON>. Task-level failures are in
// the result; the promise rejects only for a bug, so the runtime's alarm
// retry stays for transport-level failures.
func schedulerRunTask(args []js.Value) (any, error) {
	name := args[0].String()
	res := RunTask(context.Background(), name, Platform{}, strings.TrimRight(cloudflare.Getenv("UPSTREAM_API_BASE"), "/"), time.Now)
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// --- TaskDeps -------------------------------------------------------------

// Fetch calls the upstream through the global limiter.
func (p Platform) Fetch(ctx context.Context, url string) upstream.Response {
	client := &upstream.Client{HTTP: fetchDoer{fetch.NewClient()}}
	limits := &ratelimit.Client{Caller: p, MaxWait: enrichLimitWait}
	var r upstream.Response
	err := limits.Schedule(ctx, upstreamLimit, 1, func(ctx context.Context) error {
		r = client.Get(ctx, url)
		return nil
	})
	if err != nil {
		return upstream.Response{Class: "rate_limit", Remaining: -1, Err: fmt.Errorf("global limit: %w", err)}
	}
	return r
}

func (Platform) PutKV(_ context.Context, key, value string) error {
	ns, err := kv.NewNamespace(bindingKV)
	if err != nil {
		return err
	}
	return ns.PutString(key, value, nil)
}

func (p Platform) SweepBatch(ctx context.Context, cursorName string, n int) (int64, []SweepRow, error) {
	db, err := p.db()
	if err != nil {
		return 0, nil, err
	}
	var cur sql.NullInt64
	err = db.QueryRowContext(ctx, sweepCursorSQL, cursorName).Scan(&cur)
	if err != nil && err != sql.ErrNoRows {
		return 0, nil, err
	}
	rows, err := db.QueryContext(ctx, sweepSQL, cur.Int64, n)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var out []SweepRow
	for rows.Next() {
		var r SweepRow
		var id, count, sub, hist, desc float64
		var prevCount sql.NullFloat64
		var prevAt sql.NullString
		if err := rows.Scan(&id, &count, &r.AverageRating, &sub, &hist, &desc, &prevCount, &prevAt); err != nil {
			return 0, nil, err
		}
		r.TrackID, r.RatingCount = int64(id), int64(count)
		r.HasSubtitle, r.HasHistogram, r.HasDesc = sub != 0, hist != 0, desc != 0
		if prevCount.Valid && prevAt.Valid {
			r.PrevCount = int64(prevCount.Float64)
			r.PrevAt, _ = time.Parse("2006-01-02T15:04:05.000Z", prevAt.String)
		}
		out = append(out, r)
	}
	return cur.Int64, out, rows.Err()
}

func (p Platform) SaveSweep(_ context.Context, cursorName string, next int64, rows []SweepRow, at time.Time) error {
	ts := at.UTC().Format("2006-01-02T15:04:05.000Z")
	stmts := make([]enrich.Stmt, 0, 2*len(rows)+1)
	for _, r := range rows {
		stmts = append(stmts, enrich.Stmt{
			SQL:  `INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating) VALUES (?,?,?,?)`,
			Args: []any{r.TrackID, ts, r.RatingCount, r.AverageRating},
		})
		var v any
		if !math.IsNaN(r.Velocity) {
			v = r.Velocity
		}
		stmts = append(stmts, enrich.Stmt{SQL: `UPDATE app_registry SET rating_velocity = ? WHERE track_id = ?`, Args: []any{v, r.TrackID}})
	}
	stmts = append(stmts, enrich.Stmt{
		SQL:  `INSERT INTO sweep_cursors (name, cursor, updated_at) VALUES (?,?,?) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at`,
		Args: []any{cursorName, next, ts},
	})
	return p.exec(stmts)
}

// --- SchedulerCaller / charts ---------------------------------------------

// CallScheduler reaches the versioned scheduler singleton.
func (Platform) CallScheduler(_ context.Context, method, path string, body []byte) (int, []byte, error) {
	return callDO(bindingScheduler, schedulerName, "", method, path, body)
}

// Chart reads one chart from KV ("" when not fetched yet).
func (Platform) Chart(_ context.Context, key string) (string, error) {
	ns, err := kv.NewNamespace(bindingKV)
	if err != nil {
		return "", err
	}
	v, err := ns.GetString(key, nil)
	if err != nil || v == "<null>" {
		return "", err
	}
	return v, nil
}

// schedulerConfig reads SCHEDULER_BREAKER_THRESHOLD; an invalid value is
// logged and the default used.
func schedulerConfig() scheduler.Config {
	raw := cloudflare.Getenv("SCHEDULER_BREAKER_THRESHOLD")
	if raw == "" {
		return scheduler.Config{}
	}
	n, err := strconv.Atoi(raw)
	cfg, cerr := scheduler.NewConfig(n)
	if err != nil || cerr != nil {
		logx.Event("scheduler.bad_config", map[string]any{"level": logx.Error, "SCHEDULER_BREAKER_THRESHOLD": raw})
		return scheduler.Config{}
	}
	return cfg
}
