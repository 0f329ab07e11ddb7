package enrichment

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 30, 0, time.UTC)

// withWindow returns a state whose current minute holds served and failed exchanges.
func withWindow(batch int, intervalMs int64, served, failed int) State {
	s := DefaultState()
	s.BatchSize, s.IntervalMs = batch, intervalMs
	b := s.bucket(t0)
	b.Completed, b.Failed, b.Dispatched = served, failed, served+failed
	return s
}

func TestZoneFor(t *testing.T) {
	cases := []struct {
		rate    float64
		samples int
		want    Zone
	}{
		{0, 4, ZoneNoData},
		{0.1, 5, ZoneCritical},
		{0.2, 5, ZoneLow}, // 20% is not below critical
		{0.49, 10, ZoneLow},
		{0.5, 10, ZoneDead},
		{0.8, 10, ZoneDead}, // 80% is not above good
		{0.81, 10, ZoneGood},
		{0.95, 20, ZoneGood},
		{0.951, 20, ZoneGreat},
		{1, 100, ZoneGreat},
	}
	for _, c := range cases {
		if got := ZoneFor(c.rate, c.samples); got != c.want {
			t.Errorf("ZoneFor(%v,%d) = %s, want %s", c.rate, c.samples, got, c.want)
		}
	}
}

func TestAdaptEveryZone(t *testing.T) {
	cases := []struct {
		name             string
		batch            int
		interval         int64
		served, failed   int
		wantZone         Zone
		wantBatch        int
		wantInterval     int64
		wantCooldownFrom bool
	}{
		{"too few samples: no change", 10, 30000, 0, 4, ZoneNoData, 10, 30000, false},
		{"critical: cooldown, min batch, max interval", 20, 15000, 1, 9, ZoneCritical, MinBatch, 120000, true},
		{"low: halve batch, interval x1.5", 10, 30000, 4, 6, ZoneLow, 5, 45000, false},
		{"low: floors at min batch", 3, 100000, 3, 7, ZoneLow, MinBatch, 120000, false},
		{"dead zone: unchanged", 10, 30000, 7, 3, ZoneDead, 10, 30000, false},
		{"good: +10% rounded up, interval x0.95", 5, 30000, 9, 1, ZoneGood, 6, 28500, false},
		{"great: +25% rounded up, interval x0.8", 5, 30000, 20, 0, ZoneGreat, 7, 24000, false},
		{"great: capped at bounds", 48, 11000, 20, 0, ZoneGreat, MaxBatch, 10000, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := withWindow(c.batch, c.interval, c.served, c.failed)
			z := s.Adapt(t0, DefaultConfig())
			if z != c.wantZone || s.BatchSize != c.wantBatch || s.IntervalMs != c.wantInterval {
				t.Fatalf("got zone=%s batch=%d interval=%d; want %s %d %d", z, s.BatchSize, s.IntervalMs, c.wantZone, c.wantBatch, c.wantInterval)
			}
			if got := s.InCooldown(t0); got != c.wantCooldownFrom {
				t.Fatalf("in cooldown = %v, want %v", got, c.wantCooldownFrom)
			}
			if c.wantCooldownFrom && s.CooldownUntil != t0.Add(CooldownDuration).UnixMilli() {
				t.Fatalf("cooldown until %d", s.CooldownUntil)
			}
		})
	}
}

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
		{ClassStoreError, 99, ActionKeep},
		{ClassParseError, 0, ActionRequeue},
		{ClassParseError, MaxItemAttempts - 1, ActionGiveUp},
		{ClassServerError, MaxItemAttempts - 2, ActionRequeue},
		{ClassTimeout, MaxItemAttempts - 1, ActionGiveUp},
	}
	for _, c := range cases {
		if got := ActionFor(c.c, c.prior); got != c.want {
			t.Errorf("ActionFor(%s,%d) = %s, want %s", c.c, c.prior, got, c.want)
		}
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

func TestLoadClampsAndRecovers(t *testing.T) {
	raw := `{"version":1,"running":true,"batch_size":500,"interval_ms":5,"cooldown_until":` +
		itoa(t0.Add(24*time.Hour).UnixMilli()) + `,"metrics":[{"minute":-5,"completed":3},{"minute":` +
		itoa(minuteOf(t0)) + `,"completed":-1}]}`
	s, corrupt := LoadState(raw, t0)
	if corrupt {
		t.Fatal("valid JSON reported corrupt")
	}
	if s.BatchSize != MaxBatch || s.IntervalMs != MinInterval.Milliseconds() {
		t.Fatalf("not clamped: %+v", s)
	}
	if s.CooldownUntil != t0.Add(MaxCooldown).UnixMilli() {
		t.Fatalf("cooldown not capped: %d", s.CooldownUntil)
	}
	if len(s.Metrics) != 0 {
		t.Fatalf("bad buckets kept: %+v", s.Metrics)
	}
	s, corrupt = LoadState("{not json", t0)
	if !corrupt || s.BatchSize != DefaultBatch || !s.Running {
		t.Fatalf("corrupt state should fall back to defaults: %+v corrupt=%v", s, corrupt)
	}
	s, corrupt = LoadState("", t0)
	if corrupt || s.Encode(t0) != DefaultState().Encode(t0) {
		t.Fatalf("empty state should be defaults")
	}
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

func decide(t *testing.T, state *string, op string, arg any, now time.Time) Decision {
	t.Helper()
	b, _ := json.Marshal(arg)
	d := Handle(DefaultConfig(), op, *state, b, now)
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

func TestTickRunsThenAdaptsAndRearms(t *testing.T) {
	st := ""
	d := decide(t, &st, "tick", TickRequest{}, t0)
	if d.Run == nil || d.Run.BatchSize != DefaultBatch || d.Run.ChunkItems != ChunkItems {
		t.Fatalf("tick should plan a run of the batch: %+v", d)
	}
	if d.AlarmAt != t0.Add(RunTimeout).UnixMilli() {
		t.Fatalf("safety alarm missing: %d", d.AlarmAt)
	}
	now := t0.Add(2 * time.Second)
	res := make([]ItemResult, 5)
	for i := range res {
		res[i] = ItemResult{TrackID: int64(i), Class: ClassOK}
	}
	d = decide(t, &st, "tick_done", RunOutcome{Picked: 5, Results: res, DurationMs: 1500}, now)
	s, _ := LoadState(st, now)
	if s.BatchSize != 7 || s.IntervalMs != 24000 || s.Totals.Completed != 5 || s.RunStartedAt != 0 {
		t.Fatalf("after a perfect tick: %+v", s)
	}
	if d.AlarmAt != now.Add(24*time.Second).UnixMilli() {
		t.Fatalf("next alarm at %d, want interval later", d.AlarmAt)
	}
	if s.LastTick == nil || s.LastTick.Zone != string(ZoneGreat) || s.LastTick.BatchBefore != 5 {
		t.Fatalf("last tick summary %+v", s.LastTick)
	}
}

func TestCooldownEntryAndRecovery(t *testing.T) {
	st := ""
	decide(t, &st, "tick", TickRequest{}, t0)
	res := make([]ItemResult, 5)
	for i := range res {
		res[i] = ItemResult{Class: ClassRateLimit, Status: 429}
	}
	d := decide(t, &st, "tick_done", RunOutcome{Picked: 5, Results: res}, t0)
	s, _ := LoadState(st, t0)
	if !s.InCooldown(t0) || s.Totals.Cooldowns != 1 || s.BatchSize != MinBatch {
		t.Fatalf("5 refusals must enter cooldown: %+v", s)
	}
	if d.AlarmAt != min(s.CooldownUntil, t0.Add(s.Interval()).UnixMilli()) {
		t.Fatalf("after entering cooldown, wake at its end or the interval: %d", d.AlarmAt-t0.UnixMilli())
	}
	short, _ := NewConfig(15)
	st3 := ""
	decide(t, &st3, "tick", TickRequest{}, t0)
	b3, _ := json.Marshal(RunOutcome{Picked: 5, Results: res})
	if d3 := Handle(short, "tick_done", st3, b3, t0); d3.AlarmAt != t0.Add(15*time.Second).UnixMilli() {
		t.Fatalf("a short cooldown must wake at its end, got +%dms", d3.AlarmAt-t0.UnixMilli())
	}
	if _, n := s.SuccessRate(t0); n != 0 {
		t.Fatalf("cooldown must clear the window, %d samples left", n)
	}
	if len(d.Events) < 2 || d.Events[1]["event"] != "enrichment.cooldown" || d.Events[1]["samples"] != 5 || d.Events[1]["success_rate"] != 0.0 {
		t.Fatalf("cooldown must be logged: %+v", d.Events)
	}
	// During cooldown a tick does no work and wakes no later than the cooldown's end.
	mid := t0.Add(time.Minute)
	d = decide(t, &st, "tick", TickRequest{}, mid)
	if d.Run != nil {
		t.Fatal("no work during cooldown")
	}
	if d.AlarmAt > s.CooldownUntil || d.AlarmAt <= mid.UnixMilli() {
		t.Fatalf("cooldown alarm %d not in (now, cooldown end %d]", d.AlarmAt, s.CooldownUntil)
	}
	st2 := d.State
	if st2 == "" {
		st2 = st
	}
	st = st2
	status := s.Status(mid)
	if !status.InCooldown || status.CooldownRemainingS != 240 || status.ProjectedPerDay != 0 {
		t.Fatalf("status during cooldown: %+v", status)
	}
	// After the cooldown the old failures are out of the window; the loop resumes gently.
	after := time.UnixMilli(s.CooldownUntil).Add(time.Second)
	d = decide(t, &st, "tick", TickRequest{}, after)
	if d.Run == nil || d.Run.BatchSize != MinBatch {
		t.Fatalf("after cooldown, run at min batch: %+v", d)
	}
	ok := []ItemResult{{Class: ClassOK}, {Class: ClassOK}}
	decide(t, &st, "tick_done", RunOutcome{Picked: 2, Results: ok}, after)
	s, _ = LoadState(st, after)
	if s.InCooldown(after) {
		t.Fatal("should have left cooldown")
	}
	if rate, n := s.SuccessRate(after); rate != 1 || n != 2 {
		t.Fatalf("stale failures leaked into the window: rate=%v n=%d", rate, n)
	}
	// Recovery: successive perfect ticks ramp the batch back up.
	now := after
	for i := 0; i < 12; i++ {
		now = now.Add(s.Interval())
		d = decide(t, &st, "tick", TickRequest{}, now)
		res := make([]ItemResult, d.Run.BatchSize)
		for j := range res {
			res[j] = ItemResult{Class: ClassOK}
		}
		decide(t, &st, "tick_done", RunOutcome{Picked: len(res), Results: res}, now)
		s, _ = LoadState(st, now)
	}
	if s.BatchSize < 30 || s.IntervalMs > 20000 {
		t.Fatalf("did not recover: batch=%d interval=%d", s.BatchSize, s.IntervalMs)
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

func TestIdleAndRunErrorPacing(t *testing.T) {
	st := ""
	decide(t, &st, "tick", TickRequest{}, t0)
	d := decide(t, &st, "tick_done", RunOutcome{Picked: 0}, t0)
	if d.AlarmAt != t0.Add(IdleInterval).UnixMilli() {
		t.Fatalf("idle tick should wait IdleInterval: %d", d.AlarmAt)
	}
	decide(t, &st, "tick", TickRequest{}, t0)
	d = decide(t, &st, "tick_done", RunOutcome{Error: "D1 unavailable"}, t0)
	s, _ := LoadState(st, t0)
	if d.AlarmAt != t0.Add(s.Interval()).UnixMilli() || s.Totals.Ticks != 2 || d.Events[0]["level"] != "error" {
		t.Fatalf("run error: alarm=%d state=%+v events=%v", d.AlarmAt, s, d.Events)
	}
}

func TestRetryAfterDelaysNextTick(t *testing.T) {
	st := ""
	decide(t, &st, "tick", TickRequest{}, t0)
	res := []ItemResult{{Class: ClassOK}, {Class: ClassRateLimit, Status: 429, RetryAfterS: 90}}
	d := decide(t, &st, "tick_done", RunOutcome{Picked: 2, Results: res}, t0)
	if d.AlarmAt != t0.Add(90*time.Second).UnixMilli() {
		t.Fatalf("Retry-After not honoured: %d", d.AlarmAt-t0.UnixMilli())
	}
	st = ""
	decide(t, &st, "tick", TickRequest{}, t0)
	res = []ItemResult{{Class: ClassRateLimit, RetryAfterS: 86400}}
	d = decide(t, &st, "tick_done", RunOutcome{Picked: 1, Results: res}, t0)
	if d.AlarmAt != t0.Add(MaxRetryAfter).UnixMilli() {
		t.Fatalf("Retry-After must be capped: %d", d.AlarmAt-t0.UnixMilli())
	}
}

func TestTuneValidation(t *testing.T) {
	bad := []struct{ body, field string }{
		{``, "body"},
		{`[]`, "body"},
		{`{}`, "body"},
		{`{"batch_size": 1}`, "batch_size"},
		{`{"batch_size": 51}`, "batch_size"},
		{`{"batch_size": 5.5}`, "batch_size"},
		{`{"batch_size": "10"}`, "batch_size"},
		{`{"interval_ms": 9999}`, "interval_ms"},
		{`{"interval_ms": 120001}`, "interval_ms"},
		{`{"batch_size": 10, "speed": 3}`, "speed"},
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
	d := decide(t, &st, "http", httpReq("POST", "/tune", `{"batch_size": 12, "interval_ms": 15000}`), t0)
	s, _ := LoadState(st, t0)
	if d.Response.Status != 200 || s.BatchSize != 12 || s.IntervalMs != 15000 {
		t.Fatalf("tune not applied: %+v %+v", d.Response, s)
	}
	if d.AlarmBy != t0.Add(15*time.Second).UnixMilli() || d.AlarmAt != 0 {
		t.Fatalf("tune must bring the alarm forward to the new interval, not replace it: %+v", d)
	}
}

func TestResetAndUnknownRoute(t *testing.T) {
	st := ""
	decide(t, &st, "http", httpReq("POST", "/tune", `{"batch_size": 40}`), t0)
	d := decide(t, &st, "http", httpReq("POST", "/reset", ""), t0)
	s, _ := LoadState(st, t0)
	if s.BatchSize != DefaultBatch || !s.Running || d.AlarmAt == 0 {
		t.Fatalf("reset: %+v %+v", s, d)
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
	st := s.Status(t0)
	// The oldest bucket starts at minute(t0)-2, i.e. 2.5 minutes before t0.
	if st.Rolling.CompletionsPerMinute != 12 || st.ProjectedPerHour != 720 || st.ProjectedPerDay != 17280 {
		t.Fatalf("projection: %+v", st.Rolling)
	}
	if st.Rolling.SampleSize != 32 || st.Rolling.Confidence != "high" {
		t.Fatalf("rolling: %+v", st.Rolling)
	}
}

func TestConfiguredCooldown(t *testing.T) {
	cfg, err := NewConfig(20)
	if err != nil || cfg.Cooldown != 20*time.Second {
		t.Fatalf("%v %v", cfg, err)
	}
	for _, bad := range []int{-1, 3601} {
		if _, err := NewConfig(bad); err == nil {
			t.Errorf("NewConfig(%d) accepted", bad)
		}
	}
	if cfg, _ := NewConfig(0); cfg.Cooldown != CooldownDuration {
		t.Errorf("zero must mean the default")
	}
	s := withWindow(10, 30000, 0, 10)
	s.Adapt(t0, cfg)
	if s.CooldownUntil != t0.Add(20*time.Second).UnixMilli() {
		t.Fatalf("configured cooldown not used: %d", s.CooldownUntil-t0.UnixMilli())
	}
}
