package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"storecrawl/worker/config"
	"storecrawl/worker/crawl"
	"storecrawl/worker/tasks"
)

type wakeFn func() (bool, error)

func (f wakeFn) WakeController(context.Context) (bool, error) { return f() }
func (f wakeFn) WakeScheduler(context.Context) (int, error) {
	if _, err := f(); err != nil {
		return 0, errors.New("scheduler down")
	}
	return 4, nil
}
func (f wakeFn) Crawl(context.Context) crawl.Result      { return crawl.Result{Action: "idle"} }
func (f wakeFn) Cluster(context.Context) (string, error) { return "3 clusters", nil }
func (f wakeFn) Daily(context.Context) tasks.DailyResult {
	return tasks.DailyResult{Quality: tasks.Quality{Apps: 7}, Windows: tasks.QualityWindows}
}

func TestRunCron(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 5, 1, 0, time.UTC) }
	run := RunCron(context.Background(), config.CronCrawlCycle, now(), wakeFn(func() (bool, error) { return true, nil }), now)
	if run.Result != "controller_awake running=true" || run.Scheduler != "scheduler_awake tasks=4" || run.Error != "" || run.Crawl == nil || run.Crawl.Action != "idle" || run.D1 == nil || run.Subrequests != 2 {
		t.Fatalf("%+v", run)
	}
	run = RunCron(context.Background(), config.CronCrawlCycle, now(), wakeFn(func() (bool, error) { return false, errors.New("x") }), now)
	if run.Error != "x; scheduler_wake_failed: scheduler down" || run.Crawl == nil {
		t.Fatalf("one failed wake sinks neither the other nor the crawl: %+v", run)
	}
	run = RunCron(context.Background(), config.CronDaily, now(), wakeFn(nil), now)
	if run.Daily == nil || run.Daily.Quality.Apps != 7 || run.Error != "" || !strings.HasPrefix(run.Result, "daily: 7 apps") {
		t.Fatalf("daily: %+v", run)
	}
	if run = RunCron(context.Background(), "1 2 3 4 5", now(), nil, now); run.Result != "unknown_cron" {
		t.Fatalf("%+v", run)
	}
}

type memKV map[string]string

func (m memKV) Get(_ context.Context, k string) (string, error) { return m[k], nil }
func (m memKV) Put(_ context.Context, k, v string) error        { m[k] = v; return nil }

func TestCronLogKeepsTheLastRunOfEachExpression(t *testing.T) {
	log := CronLog{KV: memKV{}}
	if raw, _ := log.LastCronRuns(context.Background()); string(raw) != "{}" {
		t.Fatalf("empty: %s", raw)
	}
	log.Record(context.Background(), CronRun{Cron: config.CronDaily, Result: "one"})
	log.Record(context.Background(), CronRun{Cron: config.CronCrawlCycle, Result: "two"})
	log.Record(context.Background(), CronRun{Cron: config.CronDaily, Result: "three"})
	raw, _ := log.LastCronRuns(context.Background())
	var runs map[string]CronRun
	if err := json.Unmarshal(raw, &runs); err != nil || len(runs) != 2 || runs[config.CronDaily].Result != "three" {
		t.Fatalf("runs: %s", raw)
	}
}

func TestWakeSchedulerReadsTheStatus(t *testing.T) {
	call := func(status int, body string, err error) func(context.Context, string, string, []byte) (int, []byte, error) {
		return func(_ context.Context, method, path string, _ []byte) (int, []byte, error) {
			if method != "GET" || path != "/status" {
				t.Fatalf("%s %s", method, path)
			}
			return status, []byte(body), err
		}
	}
	if n, err := WakeScheduler(context.Background(), call(200, `{"tasks":[{},{},{},{}]}`, nil)); n != 4 || err != nil {
		t.Fatalf("%d %v", n, err)
	}
	for _, bad := range []func(context.Context, string, string, []byte) (int, []byte, error){
		call(503, ``, nil), call(0, ``, errors.New("down")), call(200, `not json`, nil),
	} {
		if _, err := WakeScheduler(context.Background(), bad); err == nil {
			t.Fatal("a failed wake must say so")
		}
	}
}

func TestWakeControllerReadsTheStatus(t *testing.T) {
	answer := func(status int, body string, err error) func(context.Context, string, string, string, []byte) (int, []byte, error) {
		return func(_ context.Context, name, method, path string, _ []byte) (int, []byte, error) {
			if name != config.ControllerName || method != "GET" || path != "/status" {
				t.Fatalf("asked %s %s %s", name, method, path)
			}
			return status, []byte(body), err
		}
	}
	if running, err := WakeController(context.Background(), answer(200, `{"running":true}`, nil)); !running || err != nil {
		t.Fatalf("running: %v %v", running, err)
	}
	if _, err := WakeController(context.Background(), answer(503, ``, nil)); err == nil {
		t.Fatal("a non-200 status is an error")
	}
	if _, err := WakeController(context.Background(), answer(0, ``, errors.New("down"))); err == nil {
		t.Fatal("an unreachable controller is an error")
	}
}
