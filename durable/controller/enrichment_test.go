package controller

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 30, 0, time.UTC)

func TestItemErrorsCountAsServed(t *testing.T) {
	s := DefaultState()
	s.Record(RunOutcome{Picked: 6, Results: []ItemResult{
		{Class: ClassNotFound}, {Class: ClassParseError}, {Class: ClassNotFound},
		{Class: ClassOK}, {Class: ClassStoreError}, {Class: ClassRateLimit},
	}}, t0)
	rate, n := s.SuccessRate(t0)
	if n != 6 || rate != 5.0/6 {
		t.Fatalf("rate=%v samples=%d, want 5/6 of 6", rate, n)
	}
	if s.Totals.ItemErrors != 4 || s.Totals.Completed != 1 || s.Totals.Failed != 1 || s.Totals.RateLimited != 1 {
		t.Fatalf("totals %+v", s.Totals)
	}
}

func TestD1CostAccumulatesAcrossRuns(t *testing.T) {
	s := DefaultState()
	s.Record(RunOutcome{Picked: 1, Results: []ItemResult{{Class: ClassOK}}, D1RowsRead: 7, D1RowsWritten: 20}, t0)
	s.Record(RunOutcome{Picked: 1, Results: []ItemResult{{Class: ClassOK}}, D1RowsRead: 5, D1RowsWritten: 18}, t0.Add(time.Second))
	if s.Totals.D1RowsRead != 12 || s.Totals.D1RowsWritten != 38 || s.Totals.Completed != 2 {
		t.Fatalf("totals %+v", s.Totals)
	}
	b, _ := json.Marshal(s.Totals)
	if !strings.Contains(string(b), `"d1_rows_read":12`) {
		t.Fatalf("status JSON %s", b)
	}
}

func TestClassifyStatus(t *testing.T) {
	cases := map[int]Class{
		200: ClassOK, 204: ClassOK, 403: ClassRateLimit, 429: ClassRateLimit,
		404: ClassNotFound, 410: ClassNotFound, 500: ClassServerError, 502: ClassServerError,
		503: ClassServerError, 504: ClassTimeout, 408: ClassTimeout, 400: ClassParseError,
	}
	for status, want := range cases {
		if got := ClassifyStatus(status); got != want {
			t.Errorf("ClassifyStatus(%d) = %s, want %s", status, got, want)
		}
	}
	for _, c := range []Class{ClassRateLimit, ClassServerError, ClassTimeout} {
		if !c.CountsAgainstUpstream() {
			t.Errorf("%s must count against the upstream", c)
		}
	}
	for _, c := range []Class{ClassOK, ClassNotFound, ClassParseError, ClassStoreError} {
		if c.CountsAgainstUpstream() {
			t.Errorf("%s must not count against the upstream", c)
		}
	}
}

func TestActionFor(t *testing.T) {
	cases := []struct {
		c     Class
		prior int
		want  ItemAction
	}{
		{ClassOK, 0, ActionStore},
		{ClassNotFound, 0, ActionMissing},
		{ClassRateLimit, 99, ActionKeep}, // rate limits never use up an item's attempts
		// A store error that keeps repeating on one item is that item's.
		{ClassStoreError, 0, ActionRequeue},
		{ClassStoreError, MaxItemAttempts - 1, ActionGiveUp},
		{ClassParseError, 0, ActionRequeue},
		{ClassParseError, MaxItemAttempts - 1, ActionGiveUp},
		// Upstream-level failures never use up an item's attempts: an
		// outage must not fail the items that were in flight.
		{ClassServerError, 99, ActionDefer},
		{ClassTimeout, MaxItemAttempts - 1, ActionDefer},
	}
	for _, c := range cases {
		if got := ActionFor(ItemResult{Class: c.c}, c.prior); got != c.want {
			t.Errorf("ActionFor(%s,%d) = %s, want %s", c.c, c.prior, got, c.want)
		}
	}
}

// A lookup batch that failed as a whole is the fate of all its items,
// never one of their attempts: refused, they wait for the pacing; any other
// failure defers them, however many attempts they had, pages or not.
func TestActionForAFailedLookupBatch(t *testing.T) {
	cases := []struct {
		answer Class // the batch answer's class
		page   string
		want   ItemAction
	}{
		{ClassRateLimit, "", ActionKeep},
		{ClassServerError, "", ActionDefer},
		{ClassTimeout, "", ActionDefer},
		// A 4xx or an answer cut short says nothing about any one app.
		{ClassParseError, "", ActionDefer},
		{ClassNotFound, "", ActionDefer},
		// While pages are paused, the same.
		{ClassParseError, PageSkipped, ActionDefer},
		{ClassRateLimit, PageSkipped, ActionKeep},
	}
	for _, c := range cases {
		class := BatchItemClass(c.answer)
		for _, prior := range []int{0, MaxItemAttempts - 1} {
			r := ItemResult{Class: class, Page: c.page, BatchFailed: true}
			if got := ActionFor(r, prior); got != c.want {
				t.Errorf("batch answered %s (item class %s), page %q, %d prior attempts: %s, want %s", c.answer, class, c.page, prior, got, c.want)
			}
		}
	}
	// Never not_found: that would dequeue every app of the batch as unknown.
	if BatchItemClass(ClassNotFound) != ClassParseError || BatchItemClass(ClassOK) != ClassParseError {
		t.Fatalf("unusable answers: %s %s", BatchItemClass(ClassNotFound), BatchItemClass(ClassOK))
	}
}

func TestDeferBackoffDoublesToItsCap(t *testing.T) {
	want := []time.Duration{DeferBase, DeferBase, 2 * DeferBase, 4 * DeferBase}
	for i, w := range want {
		if got := DeferBackoff(i); got != w {
			t.Errorf("DeferBackoff(%d) = %s, want %s", i, got, w)
		}
	}
	for _, n := range []int{7, 60, 1 << 30} {
		if got := DeferBackoff(n); got != DeferMax {
			t.Errorf("DeferBackoff(%d) = %s, want the cap %s", n, got, DeferMax)
		}
	}
}

func TestRecordCountsDeferredItems(t *testing.T) {
	s := DefaultState()
	s.Record(RunOutcome{Picked: 2, Results: []ItemResult{{Class: ClassTimeout, Deferred: true}, {Class: ClassOK}}}, t0)
	if s.Totals.Deferred != 1 || s.Totals.Failed != 1 || s.Totals.GaveUp != 0 {
		t.Fatalf("totals %+v", s.Totals)
	}
}

func TestPruneKeepsWindowPlusOneMinute(t *testing.T) {
	s := DefaultState()
	for m := 0; m < 10; m++ {
		b := s.bucket(t0.Add(time.Duration(-m) * time.Minute))
		b.Completed = 1
	}
	if len(s.Metrics) != 10 {
		t.Fatalf("setup: %d buckets", len(s.Metrics))
	}
	for i := 1; i < len(s.Metrics); i++ {
		if s.Metrics[i].Minute <= s.Metrics[i-1].Minute {
			t.Fatal("buckets not ascending")
		}
	}
	loaded, _ := LoadState(s.Encode(t0), t0)
	if len(loaded.Metrics) != metricsKeepMinutes+1 && len(loaded.Metrics) != metricsKeepMinutes {
		t.Fatalf("kept %d buckets, want ~%d", len(loaded.Metrics), metricsKeepMinutes)
	}
	w := loaded.Window(t0)
	if w.Completed != MetricsWindowMinutes { // minutes t0-4 .. t0 (t0 is mid-minute)
		t.Fatalf("window completed = %d, want %d", w.Completed, MetricsWindowMinutes)
	}
}

func TestLoadDropsBadBucketsAndRecovers(t *testing.T) {
	raw := `{"version":1,"running":true,"metrics":[{"minute":-5,"completed":3},{"minute":` +
		itoa(minuteOf(t0)) + `,"completed":-1}]}`
	s, corrupt := LoadState(raw, t0)
	if corrupt {
		t.Fatal("valid JSON reported corrupt")
	}
	if len(s.Metrics) != 0 {
		t.Fatalf("bad buckets kept: %+v", s.Metrics)
	}
	s, corrupt = LoadState("{not json", t0)
	if !corrupt || !s.Running {
		t.Fatalf("corrupt state should fall back to defaults: %+v corrupt=%v", s, corrupt)
	}
	s, corrupt = LoadState("", t0)
	if corrupt || s.Encode(t0) != DefaultState().Encode(t0) {
		t.Fatalf("empty state should be defaults")
	}
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

var seedCfg = Config{Pacing: "seed", Cooldown: CooldownDuration}

func decide(t *testing.T, state *string, op string, arg any, now time.Time) Decision {
	t.Helper()
	return decideWith(t, DefaultConfig(), state, op, arg, now)
}

func decideWith(t *testing.T, cfg Config, state *string, op string, arg any, now time.Time) Decision {
	t.Helper()
	b, _ := json.Marshal(arg)
	d := Handle(cfg, op, *state, b, now)
	if d.State != "" {
		*state = d.State
	}
	return d
}

func httpReq(method, path, body string) Request {
	return Request{Method: method, Path: path, Body: body}
}

func TestLoadSelfStarts(t *testing.T) {
	st := ""
	d := decide(t, &st, "load", nil, t0)
	if d.EnsureAlarmAt != t0.Add(StartDelay).UnixMilli() {
		t.Fatalf("fresh controller must arm its own alarm, got %+v", d)
	}
	decide(t, &st, "http", httpReq("POST", "/stop", ""), t0)
	d = decide(t, &st, "load", nil, t0)
	if d.EnsureAlarmAt != 0 || d.AlarmAt != 0 {
		t.Fatalf("stopped controller must not arm an alarm: %+v", d)
	}
}

func okResults(n int) ([]ItemResult, []RequestOutcome) {
	res := make([]ItemResult, n)
	var reqs []RequestOutcome
	for i := range res {
		res[i] = ItemResult{TrackID: int64(i), Class: ClassOK}
		for j := 0; j < SubrequestsPerItem; j++ {
			reqs = append(reqs, RequestOutcome{Item: i, Class: ClassOK, Remaining: -1})
		}
	}
	return res, reqs
}

func status(t *testing.T, st string, now time.Time, cfg Config) Status {
	s, _ := LoadState(st, now)
	return s.Status(now, cfg)
}

func TestProbeTickPlansPacedWorkAndLearns(t *testing.T) {
	st := ""
	d := decide(t, &st, "tick", TickRequest{}, t0)
	if d.Run == nil || d.Run.BatchSize < 1 || !d.Run.StopOnThrottle || d.Run.ChunkItems < 1 {
		t.Fatalf("tick should plan a paced run: %+v", d.Run)
	}
	if d.AlarmAt != t0.Add(RunTimeout).UnixMilli() {
		t.Fatalf("safety alarm missing: %d", d.AlarmAt)
	}
	first := d.Run.BatchSize
	now := t0.Add(2 * time.Second)
	res, reqs := okResults(first)
	for i := range reqs {
		reqs[i].SentAt, reqs[i].DoneAt = t0.UnixMilli()+int64(i)*100, t0.UnixMilli()+int64(i)*100+120
	}
	d = decide(t, &st, "tick_done", RunOutcome{Picked: first, Results: res, Requests: reqs, DurationMs: 1500}, now)
	if d.AlarmAt <= now.UnixMilli() || d.AlarmAt > t0.Add(time.Minute).UnixMilli() {
		t.Fatalf("next alarm %dms away", d.AlarmAt-now.UnixMilli())
	}
	s, _ := LoadState(st, now)
	if s.Totals.Completed != int64(first) || s.RunStartedAt != 0 || s.Pacing != "probe" || s.LastTick == nil {
		t.Fatalf("after a clean tick: %+v", s)
	}
	// A refused tick teaches the controller a capacity estimate.
	d = decide(t, &st, "tick", TickRequest{}, time.UnixMilli(d.AlarmAt))
	n := d.Run.BatchSize
	res, reqs = okResults(n)
	reqs[len(reqs)-1].Class = ClassRateLimit
	res[n-1].Class = ClassRateLimit
	later := time.UnixMilli(d.Run.TickAt).Add(3 * time.Second)
	decide(t, &st, "tick_done", RunOutcome{Picked: n, Results: res, Requests: reqs}, later)
	if got := status(t, st, later, DefaultConfig()); got.CapacityEstimatePerMin <= 0 || got.Pacing != "probe" {
		t.Fatalf("no capacity estimate after a refusal: %+v", got)
	}
}

func TestSeedPacingInProductCoolsDownAndRecovers(t *testing.T) {
	st := ""
	d := decideWith(t, seedCfg, &st, "tick", TickRequest{}, t0)
	if d.Run == nil || d.Run.BatchSize != pacing.SeedStartBatch || d.Run.ChunkItems != pacing.SeedParallel {
		t.Fatalf("seed plan: %+v", d.Run)
	}
	res := make([]ItemResult, 5)
	var reqs []RequestOutcome
	for i := range res {
		res[i] = ItemResult{Class: ClassRateLimit, Status: 429}
		reqs = append(reqs, RequestOutcome{Item: i, Class: ClassRateLimit, Remaining: -1})
	}
	d = decideWith(t, seedCfg, &st, "tick_done", RunOutcome{Picked: 5, Results: res, Requests: reqs}, t0)
	got := status(t, st, t0, seedCfg)
	if !got.InCooldown || got.Totals.Cooldowns != 1 || got.BatchSize != pacing.SeedMinBatch || got.IntervalMs != 120000 {
		t.Fatalf("5 refusals must enter cooldown: %+v", got)
	}
	if len(d.Events) < 2 || d.Events[1]["event"] != "enrichment.cooldown" {
		t.Fatalf("cooldown must be logged: %+v", d.Events)
	}
	// During cooldown a tick does no work and re-arms.
	mid := t0.Add(time.Minute)
	d = decideWith(t, seedCfg, &st, "tick", TickRequest{}, mid)
	if d.Run != nil || d.AlarmAt <= mid.UnixMilli() {
		t.Fatalf("no work during cooldown, and a later alarm: %+v", d)
	}
	if got := status(t, st, mid, seedCfg); got.CooldownRemainingS != 240 || got.ProjectedPerDay != 0 {
		t.Fatalf("status during cooldown: %+v", got)
	}
	// After the cooldown the loop resumes at the minimum batch.
	after := t0.Add(CooldownDuration + time.Second)
	d = decideWith(t, seedCfg, &st, "tick", TickRequest{}, after)
	if d.Run == nil || d.Run.BatchSize != pacing.SeedMinBatch {
		t.Fatalf("after cooldown, run at min batch: %+v", d)
	}
}

func TestStopIsSeenByNextAlarmAndDuringRun(t *testing.T) {
	st := ""
	d := decide(t, &st, "tick", TickRequest{}, t0)
	if d.Run == nil {
		t.Fatal("expected a run")
	}
	// Operator stops while the run is in flight.
	d = decide(t, &st, "http", httpReq("POST", "/stop", ""), t0.Add(time.Second))
	if d.AlarmAt != 0 || d.Response.Status != 200 {
		t.Fatalf("stop must not touch the alarm: %+v", d)
	}
	d = decide(t, &st, "tick_done", RunOutcome{Picked: 1, Results: []ItemResult{{Class: ClassOK}}}, t0.Add(2*time.Second))
	if d.AlarmAt != 0 {
		t.Fatal("a stopped loop must not re-arm after its run")
	}
	s, _ := LoadState(st, t0)
	if s.Running || s.Totals.Completed != 1 {
		t.Fatalf("run results must be kept after stop: %+v", s)
	}
	d = decide(t, &st, "tick", TickRequest{}, t0.Add(time.Minute))
	if d.Run != nil || d.AlarmAt != 0 {
		t.Fatalf("stopped alarm must do nothing: %+v", d)
	}
	d = decide(t, &st, "http", httpReq("POST", "/start", ""), t0.Add(2*time.Minute))
	if d.AlarmAt != t0.Add(2*time.Minute+StartDelay).UnixMilli() {
		t.Fatalf("start must arm the alarm: %+v", d)
	}
}

func TestAbandonedRunIsRecovered(t *testing.T) {
	st := ""
	decide(t, &st, "tick", TickRequest{}, t0)
	d := decide(t, &st, "tick", TickRequest{RetryCount: 1}, t0.Add(time.Minute))
	if d.Run != nil || d.AlarmAt != t0.Add(RunTimeout).UnixMilli() {
		t.Fatalf("a run in flight must not be started twice: %+v", d)
	}
	d = decide(t, &st, "tick", TickRequest{}, t0.Add(RunTimeout+time.Second))
	if d.Run == nil {
		t.Fatalf("an abandoned run must not block the loop forever: %+v", d)
	}
}

// TestShorterIdlePoll: ENRICHMENT_IDLE_S shortens the pause after a tick
// that found no work, and nothing else; out of [MinIdle, IdleInterval] it
// is refused.
func TestShorterIdlePoll(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.SetIdleSeconds(5); err != nil || cfg.IdleWait() != 5*time.Second || DefaultConfig().IdleWait() != IdleInterval {
		t.Fatalf("idle %s, err %v", cfg.IdleWait(), err)
	}
	for _, bad := range []int{0, -1, int(IdleInterval/time.Second) + 1} {
		if c := DefaultConfig(); c.SetIdleSeconds(bad) == nil {
			t.Errorf("idle %ds accepted", bad)
		}
	}
	st := ""
	decideWith(t, cfg, &st, "tick", TickRequest{}, t0)
	// The pause is the longer of the poll and the pace's own interval.
	if d := decideWith(t, cfg, &st, "tick_done", RunOutcome{Picked: 0}, t0); d.AlarmAt < t0.Add(5*time.Second).UnixMilli() || d.AlarmAt >= t0.Add(IdleInterval).UnixMilli() {
		t.Fatalf("idle tick with a 5 s poll: next wake in %s", time.UnixMilli(d.AlarmAt).Sub(t0))
	}
}

func TestIdleAndRunErrorPacing(t *testing.T) {
	st := ""
	decide(t, &st, "tick", TickRequest{}, t0)
	d := decide(t, &st, "tick_done", RunOutcome{Picked: 0}, t0)
	if d.AlarmAt < t0.Add(IdleInterval).UnixMilli() {
		t.Fatalf("idle tick should wait IdleInterval: %d", d.AlarmAt-t0.UnixMilli())
	}
	decide(t, &st, "tick", TickRequest{}, t0)
	d = decide(t, &st, "tick_done", RunOutcome{Error: "D1 unavailable"}, t0)
	s, _ := LoadState(st, t0)
	if d.AlarmAt <= t0.UnixMilli() || s.Totals.Ticks != 2 || d.Events[0]["level"] != "error" {
		t.Fatalf("run error: alarm=%d state=%+v events=%v", d.AlarmAt, s, d.Events)
	}
}

func TestRetryAfterDelaysNextTick(t *testing.T) {
	st := ""
	decide(t, &st, "tick", TickRequest{}, t0)
	res := []ItemResult{{Class: ClassOK}, {Class: ClassRateLimit, Status: 429, RetryAfterS: 90}}
	at := t0.UnixMilli()
	reqs := []RequestOutcome{{Item: 0, Kind: RequestPage, Class: ClassOK, SentAt: at, DoneAt: at, Remaining: -1},
		{Item: 1, Kind: RequestPage, Class: ClassRateLimit, SentAt: at, DoneAt: at, RetryAfterMs: 90000, Remaining: -1}}
	d := decide(t, &st, "tick_done", RunOutcome{Picked: 2, Results: res, Requests: reqs}, t0)
	if d.AlarmAt < t0.Add(90*time.Second).UnixMilli() {
		t.Fatalf("Retry-After not honoured: %d", d.AlarmAt-t0.UnixMilli())
	}
	// The seed rules keep no hold of their own: the loop waits, capped.
	seed, err := NewConfig("seed", 0)
	if err != nil {
		t.Fatal(err)
	}
	st = ""
	decideWith(t, seed, &st, "tick", TickRequest{}, t0)
	d = decideWith(t, seed, &st, "tick_done", RunOutcome{Picked: 2, Results: res}, t0)
	if d.AlarmAt < t0.Add(90*time.Second).UnixMilli() {
		t.Fatalf("seed: Retry-After not honoured: %d", d.AlarmAt-t0.UnixMilli())
	}
	st = ""
	decideWith(t, seed, &st, "tick", TickRequest{}, t0)
	res = []ItemResult{{Class: ClassRateLimit, RetryAfterS: 86400}}
	d = decideWith(t, seed, &st, "tick_done", RunOutcome{Picked: 1, Results: res}, t0)
	if d.AlarmAt > t0.Add(MaxRetryAfter).UnixMilli() {
		t.Fatalf("Retry-After must be capped: %d", d.AlarmAt-t0.UnixMilli())
	}
}

func TestTuneValidation(t *testing.T) {
	bad := []struct{ body, field string }{
		{``, "body"},
		{`[]`, "body"},
		{`{}`, "body"},
		{`{"batch_size": 1}`, "batch_size"},
		{`{"rate_per_min": 60, "host": "cdn"}`, "host"},
		{`{"rate_per_min": 60, "host": 1}`, "host"},
		{`{"batch_size": 51}`, "batch_size"},
		{`{"batch_size": 5.5}`, "batch_size"},
		{`{"batch_size": "10"}`, "batch_size"},
		{`{"interval_ms": 9999}`, "interval_ms"},
		{`{"interval_ms": 120001}`, "interval_ms"},
		{`{"batch_size": 10, "speed": 3}`, "speed"},
		{`{"rate_per_min": 0}`, "rate_per_min"},
		{`{"rate_per_min": "fast"}`, "rate_per_min"},
	}
	for _, c := range bad {
		st := ""
		decide(t, &st, "load", nil, t0)
		before := st
		d := decide(t, &st, "http", httpReq("POST", "/tune", c.body), t0)
		if d.Response == nil || d.Response.Status != 400 {
			t.Fatalf("%q: want 400, got %+v", c.body, d.Response)
		}
		fe := d.Response.Body.(*FieldError)
		if fe.Field != c.field || !strings.Contains(fe.Error, c.field) && c.field != "body" {
			t.Errorf("%q: field %q, want %q", c.body, fe.Field, c.field)
		}
		if st != before || d.State != "" {
			t.Errorf("%q: a rejected tune changed state", c.body)
		}
	}
	st := ""
	// The tick waits for both hosts' paces: the API host's interval too.
	decideWith(t, seedCfg, &st, "http", httpReq("POST", "/tune", `{"host": "api", "interval_ms": 15000}`), t0)
	d := decideWith(t, seedCfg, &st, "http", httpReq("POST", "/tune", `{"batch_size": 12, "interval_ms": 15000}`), t0)
	got := status(t, st, t0, seedCfg)
	if d.Response.Status != 200 || got.BatchSize != 12 || got.IntervalMs != 15000 {
		t.Fatalf("tune not applied: %+v %+v", d.Response, got)
	}
	if d.AlarmBy != t0.Add(MinTuneDelay).UnixMilli() || d.AlarmAt != 0 {
		t.Fatalf("tune must bring the alarm forward, not replace it: %+v", d)
	}
	st = ""
	decide(t, &st, "http", httpReq("POST", "/tune", `{"rate_per_min": 240}`), t0)
	if got := status(t, st, t0, DefaultConfig()); got.PacingDetail["rate_per_min"] != 240.0 {
		t.Fatalf("probe rate not tuned: %+v", got.PacingDetail)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// The incident: a tune of batch_size 10 and interval_ms 15000 landed as
// 40 a minute on the store host's rate while the status still showed
// batch_size 88 and interval_ms 10000. The status shows the pace the
// controller runs (the rate as the next tick's items and the interval
// they are paid for in), and the tune's answer says what changed.
func TestStatusAndTuneAgree(t *testing.T) {
	st := ""
	decide(t, &st, "load", nil, t0)
	d := decide(t, &st, "http", httpReq("POST", "/tune", `{"batch_size":10,"interval_ms":15000}`), t0)
	ans := d.Response.Body.(Status)
	tu := ans.Tuned
	if tu == nil || tu.Host != HostStore || deref(tu.After.RatePerMin) != 40 || tu.Before.RatePerMin == nil || tu.Note == "" {
		t.Fatalf("tune's answer must say what changed: %s", mustJSON(t, tu))
	}
	// 40 a minute: 7 items a tick (⌈40 × 10 s ÷ 60 s⌉), paid for in 10.5 s.
	got := status(t, st, t0, DefaultConfig())
	if got.BatchSize != 7 || got.IntervalMs != 10500 || got.Paces[HostStore].RatePerMin != 40 || got.Tuned != nil ||
		ans.BatchSize != 7 || ans.IntervalMs != 10500 {
		t.Fatalf("status: batch %v interval %v, store pace %+v; tune's answer %v/%v", got.BatchSize, got.IntervalMs, got.Paces[HostStore], ans.BatchSize, ans.IntervalMs)
	}
	// The seed rules pace by batch and interval: shown, and tuned as given
	// (the API host's interval too: the tick waits for both hosts).
	st = ""
	decideWith(t, seedCfg, &st, "http", httpReq("POST", "/tune", `{"host":"api","interval_ms":15000}`), t0)
	d = decideWith(t, seedCfg, &st, "http", httpReq("POST", "/tune", `{"batch_size":10,"interval_ms":15000}`), t0)
	tu = d.Response.Body.(Status).Tuned
	if got := status(t, st, t0, seedCfg); got.BatchSize != 10 || got.IntervalMs != 15000 ||
		deref(tu.After.BatchSize) != 10 || deref(tu.After.IntervalMs) != 15000 || tu.Note != "" {
		t.Fatalf("seed: status %v/%v, tuned %s", got.BatchSize, got.IntervalMs, mustJSON(t, tu))
	}
}

// batch_size and interval_ms are in the status under every algorithm, with
// one meaning: the items the next tick takes, and how long after its start
// the controller starts the one after it.
func TestStatusShowsThePaceUnderEveryAlgorithm(t *testing.T) {
	for _, name := range pacing.Names() {
		cfg := Config{Pacing: name, Cooldown: CooldownDuration}
		st := ""
		decideWith(t, cfg, &st, "load", nil, t0)
		raw := mustJSON(t, status(t, st, t0, cfg))
		got := status(t, st, t0, cfg)
		if !strings.Contains(raw, `"batch_size":`) || !strings.Contains(raw, `"interval_ms":`) || got.BatchSize < 1 || got.IntervalMs <= 0 {
			t.Errorf("%s: no pace in the status: %s", name, raw)
			continue
		}
		d := decideWith(t, cfg, &st, "tick", TickRequest{}, t0)
		if d.Run == nil || d.Run.BatchSize != got.BatchSize {
			t.Errorf("%s: status said %d items, the tick took %+v", name, got.BatchSize, d.Run)
		}
	}
	// Where the tick leaves the pace as it was, the next tick comes exactly
	// interval_ms later: the seed rules below their five samples keep their
	// batch and interval (from the tick's end).
	for _, tc := range []struct {
		cfg     Config
		tunes   []string
		fromEnd bool
	}{
		{seedCfg, []string{`{"host":"api","interval_ms":15000}`, `{"batch_size":2,"interval_ms":12000}`}, true},
	} {
		st := ""
		decideWith(t, tc.cfg, &st, "load", nil, t0)
		for _, tu := range tc.tunes {
			decideWith(t, tc.cfg, &st, "http", httpReq("POST", "/tune", tu), t0)
		}
		want := status(t, st, t0, tc.cfg)
		d := decideWith(t, tc.cfg, &st, "tick", TickRequest{}, t0)
		n := d.Run.BatchSize
		res, reqs := okResults(n)
		reqs = append(reqs, RequestOutcome{Item: 0, Class: ClassOK, Remaining: -1, Kind: RequestLookup})
		for i := range reqs {
			reqs[i].SentAt, reqs[i].DoneAt = t0.UnixMilli(), t0.UnixMilli()+100
		}
		done := t0.Add(time.Second)
		d = decideWith(t, tc.cfg, &st, "tick_done", RunOutcome{Picked: n, Results: res, Requests: reqs}, done)
		from := t0
		if tc.fromEnd {
			from = done
		}
		if n != want.BatchSize || d.AlarmAt-from.UnixMilli() != want.IntervalMs {
			t.Errorf("%s: status said %d items then %d ms; the tick took %d, the next came %d ms after",
				tc.cfg.Pacing, want.BatchSize, want.IntervalMs, n, d.AlarmAt-from.UnixMilli())
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestResetAndUnknownRoute(t *testing.T) {
	st := ""
	decideWith(t, seedCfg, &st, "http", httpReq("POST", "/tune", `{"batch_size": 40}`), t0)
	d := decideWith(t, seedCfg, &st, "http", httpReq("POST", "/reset", ""), t0)
	got := status(t, st, t0, seedCfg)
	if got.BatchSize != pacing.SeedStartBatch || !got.Running || d.AlarmAt == 0 {
		t.Fatalf("reset: %+v %+v", got, d)
	}
	d = decide(t, &st, "http", httpReq("DELETE", "/status", ""), t0)
	if d.Response.Status != 404 {
		t.Fatalf("unknown route: %+v", d.Response)
	}
}

func TestStatusProjection(t *testing.T) {
	s := DefaultState()
	// 30 completions spread over the last 3 minutes.
	for m := 0; m < 3; m++ {
		s.bucket(t0.Add(time.Duration(-m) * time.Minute)).Completed = 10
	}
	s.bucket(t0).Failed = 2
	st := s.Status(t0, DefaultConfig())
	// Over the window's 5 minutes, not the 2.5 its oldest bucket covers.
	if st.Rolling.CompletionsPerMinute != 6 || st.ProjectedPerHour != 360 || st.ProjectedPerDay != 8640 || st.Rolling.WindowS != 300 {
		t.Fatalf("projection: %d/h, %d/day, %+v", st.ProjectedPerHour, st.ProjectedPerDay, st.Rolling)
	}
	// A burst in a young controller's first minute: 33 apps ÷ 5, not ÷ 1.
	burst := DefaultState()
	burst.bucket(t0).Completed = 33
	if st := burst.Status(t0, DefaultConfig()); st.Rolling.CompletionsPerMinute != 6.6 || st.ProjectedPerDay != 9504 ||
		!strings.Contains(st.ProjectionBasis, "last 5 min ÷ 5") {
		t.Fatalf("burst: %v/min, %d/day (%s)", st.Rolling.CompletionsPerMinute, st.ProjectedPerDay, st.ProjectionBasis)
	}
	if st.Rolling.SampleSize != 32 || st.Rolling.Confidence != "high" {
		t.Fatalf("rolling: %+v", st.Rolling)
	}
}

func TestConfig(t *testing.T) {
	cfg, err := NewConfig("seed", 20)
	if err != nil || cfg.Cooldown != 20*time.Second || cfg.Pacing != "seed" {
		t.Fatalf("%v %v", cfg, err)
	}
	for _, bad := range []int{-1, 3601} {
		if _, err := NewConfig("", bad); err == nil {
			t.Errorf("NewConfig(%d) accepted", bad)
		}
	}
	if _, err := NewConfig("warp", 0); err == nil {
		t.Error("unknown pacing accepted")
	}
	if cfg, _ := NewConfig("", 0); cfg != DefaultConfig() {
		t.Errorf("empty must mean the default")
	}
	// The configured cooldown reaches the seed rules.
	short := Config{Pacing: "seed", Cooldown: 20 * time.Second}
	st := ""
	decideWith(t, short, &st, "tick", TickRequest{}, t0)
	var reqs []RequestOutcome
	res := make([]ItemResult, 5)
	for i := range res {
		res[i].Class = ClassRateLimit
		reqs = append(reqs, RequestOutcome{Item: i, Class: ClassRateLimit, Remaining: -1})
	}
	decideWith(t, short, &st, "tick_done", RunOutcome{Picked: 5, Results: res, Requests: reqs}, t0)
	if got := status(t, st, t0, short); got.CooldownRemainingS != 20 {
		t.Fatalf("configured cooldown not used: %+v", got)
	}
	// Switching algorithms starts the new one afresh, keeping the totals.
	d := decide(t, &st, "load", nil, t0)
	s, _ := LoadState(d.State, t0)
	if s.Pacing != "probe" || s.Totals.Cooldowns != 1 || len(d.Events) == 0 {
		t.Fatalf("switch: %+v %v", s, d.Events)
	}
}

func TestRestartAbandonsTheDeadRun(t *testing.T) {
	st := ""
	d := decide(t, &st, "tick", TickRequest{}, t0)
	if d.Run == nil {
		t.Fatal("expected a run")
	}
	// The object restarts mid-run: the new instance loads the state.
	later := t0.Add(20 * time.Second)
	d = decide(t, &st, "load", nil, later)
	if d.AlarmAt != later.Add(StartDelay).UnixMilli() || len(d.Events) == 0 || d.Events[len(d.Events)-1]["event"] != "enrichment.run_abandoned" {
		t.Fatalf("load after a dead run must resume soon: %+v", d)
	}
	if d = decide(t, &st, "tick", TickRequest{}, later.Add(StartDelay)); d.Run == nil {
		t.Fatalf("the loop must continue: %+v", d)
	}
}

func TestCappedHoldIsShownToOperators(t *testing.T) {
	s := DefaultState()
	if st := s.Status(t0, DefaultConfig()); st.LastHoldCapped != nil {
		t.Fatalf("no hold capped yet: %+v", st.LastHoldCapped)
	}
	s.Record(RunOutcome{Picked: 1, Results: []ItemResult{{Class: ClassRateLimit}},
		Requests: []RequestOutcome{{Class: ClassRateLimit, RetryAfterMs: 300_000, AskedHoldMs: 86_400_000, Remaining: -1}}}, t0)
	st := s.Status(t0, DefaultConfig())
	if h := st.LastHoldCapped; h == nil || h.AskedS != 86400 || h.HeldS != 300 || h.At != t0.UnixMilli() || st.Totals.HoldsCapped != 1 {
		t.Fatalf("capped hold: %+v, totals %+v", h, st.Totals)
	}
}

// However fast the pacing goes, a tick plans only the items whose worst
// case, and that of their lookup batches, fits the invocation's budget of
// subrequests (SUBREQUEST_BUDGET), and whose D1 calls fit D1's own bound.
func TestTickFitsThePlatformSubrequestLimit(t *testing.T) {
	cost := func(items, batch int) int {
		return items*MaxCallsPerItem + (items+batch-1)/batch*MaxCallsPerLookup + PagePutCalls
	}
	for _, budget := range []int{FreeSubrequests, 1000, DefaultSubrequests} {
		calls, queries := RunBudget(budget)
		if calls+tickReserve(budget) != budget || queries > min(budget, D1QueriesPerInvocation) || calls > budget {
			t.Fatalf("budget %d: run calls %d, queries %d", budget, calls, queries)
		}
		for _, batch := range []int{MinLookupBatch, 7, DefaultLookupBatch, MaxLookupBatch} {
			n := ItemsPerTick(batch, budget)
			fits := func(n int) bool { return cost(n, batch) <= calls && n*MaxD1PerItem <= queries }
			if n < 1 || !fits(n) || fits(n+1) {
				t.Errorf("budget %d batch %d: %d items cost %d calls, %d D1 (run budget %d, %d)", budget, batch, n, cost(n, batch), n*MaxD1PerItem, calls, queries)
			}
		}
	}
	// Batched lookups leave room for more items than one lookup each.
	if ItemsPerTick(DefaultLookupBatch, 1000) <= ItemsPerTick(MinLookupBatch, 1000) {
		t.Fatalf("items per tick: %d batched, %d unbatched", ItemsPerTick(DefaultLookupBatch, 1000), ItemsPerTick(MinLookupBatch, 1000))
	}
	// Workers Paid: D1's 1,000 queries bound the tick, not the 10,000 calls.
	if n := ItemsPerTick(DefaultLookupBatch, DefaultSubrequests); n*MaxD1PerItem > D1QueriesPerInvocation || n*MaxCallsPerItem > DefaultSubrequests {
		t.Fatalf("paid plan: %d items", n)
	}
	for _, budget := range []int{0, FreeSubrequests} {
		for _, batch := range []int{0, 1, MaxLookupBatch} {
			cfg := DefaultConfig()
			cfg.LookupBatch, cfg.Subrequests = batch, budget
			st := ""
			for _, host := range []string{HostStore, HostAPI} {
				decideWith(t, cfg, &st, "http", httpReq("POST", "/tune", fmt.Sprintf(`{"rate_per_min": %g, "host": %q}`, pacing.MaxRatePerMin, host)), t0)
			}
			d := decideWith(t, cfg, &st, "tick", TickRequest{}, t0.Add(time.Second))
			want := ItemsPerTick(cfg.LookupBatchSize(), cfg.SubrequestBudget())
			calls, queries := RunBudget(cfg.SubrequestBudget())
			if d.Run == nil || d.Run.BatchSize > want || d.Run.Subrequests != calls || d.Run.D1Queries != queries || d.Run.LookupBatch != cfg.LookupBatchSize() {
				t.Fatalf("LOOKUP_BATCH %d, budget %d: plan at the highest rate: %+v (cap %d)", batch, budget, d.Run, want)
			}
			if budget == FreeSubrequests && d.Run.BatchSize != want {
				t.Fatalf("free plan: the highest rate plans the cap %d, got %d", want, d.Run.BatchSize)
			}
		}
	}
}

func TestLookupBatchConfig(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.LookupBatchSize() != DefaultLookupBatch {
		t.Fatalf("default %d", cfg.LookupBatchSize())
	}
	for _, n := range []int{0, -1, MaxLookupBatch + 1} {
		if err := cfg.SetLookupBatch(n); err == nil {
			t.Errorf("%d accepted", n)
		}
	}
	if err := cfg.SetLookupBatch(MaxLookupBatch); err != nil || cfg.LookupBatchSize() != MaxLookupBatch {
		t.Fatalf("%v %d", err, cfg.LookupBatchSize())
	}
}

// The upstream's cost is counted by kind, only for what reached it; the
// status divides it by the apps completed.
func TestUpstreamRequestsAreCountedByKind(t *testing.T) {
	s := DefaultState()
	s.Record(RunOutcome{Picked: 3, Results: []ItemResult{{Class: ClassOK, Page: PageParsed}, {Class: ClassOK, Page: PageParsed}, {Class: ClassRateLimit}},
		Requests: []RequestOutcome{
			{Kind: RequestLookup, Class: ClassOK, Remaining: -1},
			{Kind: RequestPage, Class: ClassOK, Remaining: -1}, {Kind: RequestPage, Class: ClassOK, Remaining: -1},
			{Kind: RequestPage, Class: ClassRateLimit, Remaining: -1, Local: true}, // our own limit: never sent
		}}, t0)
	st := s.Status(t0, DefaultConfig())
	if st.Totals.LookupRequests != 1 || st.Totals.PageRequests != 2 || st.RequestsPerEnrichedApp != 1.5 {
		t.Fatalf("totals %+v, per app %v", st.Totals, st.RequestsPerEnrichedApp)
	}
	if c := s.Totals.Counters(); c["lookup_requests"] != 1 || c["page_requests"] != 2 {
		t.Fatalf("ledger counters %v", c)
	}
}
