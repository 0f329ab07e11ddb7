package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"storecrawl/worker/config"
	"storecrawl/worker/crawl"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
	"storecrawl/worker/subreq"
	"storecrawl/worker/tasks"
)

// Cron dispatch: each cron expression of wrangler.jsonc runs its task here,
// and what it did (and cost in D1) is kept in KV for GET /v1/system/cron.

// CronRun is what one cron invocation did, kept in KV for operators.
type CronRun struct {
	Cron          string `json:"cron"`
	ScheduledTime string `json:"scheduled_time"`
	RanAt         string `json:"ran_at"`
	Result        string `json:"result"`
	// Scheduler is what the crawl cycle's scheduler wake found.
	Scheduler string             `json:"scheduler,omitempty"`
	Crawl     *crawl.Result      `json:"crawl,omitempty"`
	Daily     *tasks.DailyResult `json:"daily,omitempty"`
	// D1 is what the run cost in D1, from D1's own result metadata.
	D1 *d1.CostView `json:"d1,omitempty"`
	// DurationMs is the run's wall time (its record's KV write after it).
	DurationMs int64 `json:"duration_ms"`
	// Subrequests is what the run made of the invocation's
	// subreq.PlatformLimit: the calls of the D1, upstream, limiter and
	// queue clients (they spend from ctx's budget) and the two wakes.
	Subrequests int    `json:"subrequests"`
	Error       string `json:"error,omitempty"`
}

// CronTasks runs the work of one cron expression.
type CronTasks interface {
	// WakeController touches the EnrichmentController so a broken alarm
	// loop is restarted, and reports whether it is running.
	WakeController(ctx context.Context) (running bool, err error)
	// WakeScheduler touches the SchedulerDO so its alarm is armed even when
	// nobody has called a /v1/scheduler route since a deploy.
	WakeScheduler(ctx context.Context) (tasks int, err error)
	// Crawl runs one discovery cycle.
	Crawl(ctx context.Context) crawl.Result
	// Cluster runs one batch of market clustering and opportunity scoring.
	Cluster(ctx context.Context) (summary string, err error)
	// Daily runs the data-quality check (tasks.RunDaily).
	Daily(ctx context.Context) tasks.DailyResult
}

// RunCron executes the task for expr. It never returns an error to the
// runtime (that would kill the shared Go instance); failures are in the run.
func RunCron(ctx context.Context, expr string, scheduled time.Time, tasks CronTasks, now func() time.Time) CronRun {
	run := CronRun{Cron: expr, ScheduledTime: scheduled.UTC().Format(time.RFC3339)}
	// Counted, not capped: the platform enforces its own limit.
	spent := measure(ctx, now, func(ctx context.Context) { runCron(ctx, expr, tasks, &run) })
	run.RanAt = now().UTC().Format(time.RFC3339Nano)
	run.DurationMs = spent.Duration.Milliseconds()
	run.Subrequests = spent.Subrequests
	d1 := spent.D1
	run.D1 = &d1
	fields := map[string]any{"cron": expr, "result": run.Result, "d1": d1, "duration_ms": run.DurationMs, "subrequests": run.Subrequests}
	if run.Error != "" {
		fields["level"] = logx.Error
		fields["error"] = run.Error
	}
	logx.Event("cron.run", fields)
	return run
}

// runCron runs the work of one cron expression into run.
func runCron(ctx context.Context, expr string, tasks CronTasks, run *CronRun) {
	switch expr {
	case config.CronCrawlCycle:
		// Independent steps, each with its own error handling: one failing
		// cannot sink the other.
		subreq.Spend(ctx, 2) // the wakes: Durable Object calls
		running, err := tasks.WakeController(ctx)
		if err != nil {
			run.Result, run.Error = "controller_wake_failed", err.Error()
		} else {
			run.Result = fmt.Sprintf("controller_awake running=%v", running)
		}
		if n, err := tasks.WakeScheduler(ctx); err != nil {
			run.Error = strings.TrimPrefix(run.Error+"; scheduler_wake_failed: "+err.Error(), "; ")
		} else {
			run.Scheduler = fmt.Sprintf("scheduler_awake tasks=%d", n)
		}
		crawl := tasks.Crawl(ctx) // counted: the wakes above are DO calls, not D1
		run.Crawl = &crawl
		if crawl.Error != "" {
			run.Error = strings.TrimPrefix(run.Error+"; crawl: "+crawl.Error, "; ")
		}
	case config.CronClustering:
		summary, err := tasks.Cluster(ctx)
		if err != nil {
			run.Result, run.Error = "clustering_failed", err.Error()
		} else {
			run.Result = "clustered: " + summary
		}
	case config.CronDaily:
		daily := tasks.Daily(ctx)
		run.Daily = &daily
		run.Result = "daily: " + daily.Summary()
		if daily.Error != "" {
			run.Error = daily.Error
		}
	default:
		run.Result, run.Error = "unknown_cron", "no task for this expression"
	}
}

// CronRunsKey is the KV key holding the last run of every cron expression.
const CronRunsKey = "system:cron_runs"

// KV reads and writes values every user reads alike (cf.KV under workerd).
type KV interface {
	Get(ctx context.Context, key string) (string, error)
	Put(ctx context.Context, key, value string) error
}

// CronLog keeps the last run of every cron expression in KV.
type CronLog struct{ KV KV }

// LastCronRuns reads the record ({} before any run).
func (l CronLog) LastCronRuns(ctx context.Context) (json.RawMessage, error) {
	v, err := l.KV.Get(ctx, CronRunsKey)
	if err != nil || v == "" {
		return json.RawMessage(`{}`), nil
	}
	return json.RawMessage(v), nil
}

// Record merges run into the record of last runs per expression.
func (l CronLog) Record(ctx context.Context, run CronRun) error {
	runs := map[string]CronRun{}
	if raw, err := l.LastCronRuns(ctx); err == nil {
		json.Unmarshal(raw, &runs)
	}
	runs[run.Cron] = run
	b, _ := json.Marshal(runs)
	return l.KV.Put(ctx, CronRunsKey, string(b))
}

// WakeScheduler asks the SchedulerDO for its status: handling any call
// ensures its alarm, so the periodic tasks start after a fresh deploy. It
// reports how many tasks the scheduler knows.
func WakeScheduler(ctx context.Context, call func(ctx context.Context, method, path string, body []byte) (int, []byte, error)) (int, error) {
	status, body, err := call(ctx, "GET", "/status", nil)
	if err != nil {
		return 0, err
	}
	if status != 200 {
		return 0, fmt.Errorf("scheduler status HTTP %d", status)
	}
	var st struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return 0, fmt.Errorf("scheduler status: %w", err)
	}
	return len(st.Tasks), nil
}

// WakeController touches the EnrichmentController through fetch (its status
// call ensures the alarm loop is armed) and reports whether it is running.
func WakeController(ctx context.Context, fetch func(ctx context.Context, name, method, path string, body []byte) (int, []byte, error)) (bool, error) {
	status, body, err := fetch(ctx, config.ControllerName, "GET", "/status", nil)
	if err != nil {
		return false, err
	}
	if status != 200 {
		return false, fmt.Errorf("controller status HTTP %d", status)
	}
	var st struct {
		Running bool `json:"running"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return false, fmt.Errorf("controller status: %w", err)
	}
	return st.Running, nil
}
