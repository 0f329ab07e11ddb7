//go:build js && wasm

package worker

import (
	"context"
	"math"
	"strings"
	"syscall/js"
	"time"

	"github.com/syumai/workers/cloudflare"
	"github.com/syumai/workers/cloudflare/kv"

	"storecrawl/durable/scheduler"
	"storecrawl/worker/d1"
	"storecrawl/worker/upstream"
)

// schedulerDecide(op, state, argJSON, nowMs) → scheduler.Decision.
func schedulerDecide(args []js.Value) (any, error) {
	now := time.UnixMilli(int64(args[3].Float()))
	d := scheduler.Handle(cfg.Scheduler, args[0].String(), args[1].String(), []byte(args[2].String()), now)
	emit(d.Events)
	d.Events = nil
	return d, nil
}

// schedulerRunTask(name) → Promise of scheduler.ResultMsg. Task-level failures are in
// the result; the promise rejects only for a bug, so the runtime's alarm
// retry stays for transport-level failures.
func schedulerRunTask(args []js.Value) (any, error) {
	name := args[0].String()
	deps := struct {
		Platform
		LedgerReconciler
	}{Platform{}, historyService}
	return RunTask(context.Background(), name, deps, strings.TrimRight(cloudflare.Getenv("UPSTREAM_API_BASE"), "/"), time.Now), nil
}

// --- TaskDeps -------------------------------------------------------------

// Fetch calls the upstream through the global limiter.
func (p Platform) Fetch(ctx context.Context, url string) upstream.Response {
	return catalogue().Get(ctx, url)
}

func (Platform) PutKV(_ context.Context, key, value string) error {
	ns, err := kv.NewNamespace(bindingKV)
	if err != nil {
		return err
	}
	return ns.PutString(key, value, nil)
}

// SweepBatch reads through queryAll, so a cron run's D1 cost counts it.
func (p Platform) SweepBatch(ctx context.Context, cursorName string, n int) (int64, []SweepRow, error) {
	curRows, err := queryAll(ctx, sweepCursorSQL, cursorName)
	if err != nil {
		return 0, nil, err
	}
	var cur int64
	if len(curRows) > 0 {
		if c := curRows[0].Get("cursor"); c.Type() == js.TypeNumber {
			cur = int64(c.Float())
		}
	}
	rows, err := queryAll(ctx, sweepSQL, cur, n)
	if err != nil {
		return 0, nil, err
	}
	out := make([]SweepRow, 0, len(rows))
	for _, r := range rows {
		row := SweepRow{
			TrackID: int64(r.Get("track_id").Float()), RatingCount: int64(r.Get("ratings").Float()), AverageRating: r.Get("rating").Float(),
			HasSubtitle: r.Get("has_subtitle").Float() != 0, HasHistogram: r.Get("has_histogram").Float() != 0, HasDesc: r.Get("has_description").Float() != 0,
		}
		if pc, pa := r.Get("prev_ratings"), r.Get("prev_at"); pc.Type() == js.TypeNumber && pa.Type() == js.TypeString {
			row.PrevCount = int64(pc.Float())
			row.PrevAt, _ = time.Parse("2006-01-02T15:04:05.000Z", pa.String())
		}
		out = append(out, row)
	}
	return cur, out, nil
}

// SaveDailySnapshots writes the day's snapshots and the cursor (counted).
func (p Platform) SaveDailySnapshots(ctx context.Context, cursorName string, next int64, rows []SweepRow, at time.Time) error {
	return p.execCtx(ctx, DailySnapshotStatements(cursorName, next, rows, at))
}

// Daily runs the daily cron's snapshots and data-quality check.
func (p Platform) Daily(ctx context.Context) DailyResult {
	return RunDaily(ctx, p, time.Now)
}

func (p Platform) SaveSweep(_ context.Context, cursorName string, next int64, rows []SweepRow, at time.Time) error {
	ts := at.UTC().Format("2006-01-02T15:04:05.000Z")
	stmts := make([]d1.Stmt, 0, 2*len(rows)+1)
	for _, r := range rows {
		stmts = append(stmts, d1.Stmt{
			SQL:  `INSERT OR IGNORE INTO app_snapshots (track_id, taken_at, rating_count, average_rating) VALUES (?,?,?,?)`,
			Args: []any{r.TrackID, ts, r.RatingCount, r.AverageRating},
		})
		var v any
		if !math.IsNaN(r.Velocity) {
			v = r.Velocity
		}
		stmts = append(stmts, d1.Stmt{SQL: `UPDATE app_registry SET rating_velocity = ? WHERE track_id = ?`, Args: []any{v, r.TrackID}})
	}
	stmts = append(stmts, CursorStmt(cursorName, next, at))
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
