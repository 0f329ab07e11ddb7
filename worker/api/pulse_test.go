package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/ledgerdb"
)

var pulseNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// historyWith builds the target's one-minute history (6 h up to pulseNow)
// from completions per minute, keyed by minutes before now.
func historyWith(completedMinutesAgo map[int]int64) ledgerdb.History {
	q := ledgerdb.HistoryQuery{Target: "main", Since: pulseNow.Add(-6 * time.Hour), Until: pulseNow, Bucket: time.Minute}
	var ticks []ledgerdb.TickMinute
	for ago := 360; ago >= 1; ago-- {
		n, ok := completedMinutesAgo[ago]
		if !ok {
			continue
		}
		ticks = append(ticks, ledgerdb.TickMinute{Minute: pulseNow.Add(-time.Duration(ago) * time.Minute).UnixMilli(), Ticks: 6, Dispatched: n + 1, Completed: n})
	}
	return ledgerdb.BuildHistory(q, ticks, nil)
}

// runningStatus paces 88 items every 10 s.
func runningStatus() controller.Status {
	return controller.Status{Running: true, BatchSize: 88, IntervalMs: 10000, Rolling: controller.Rolling{WindowS: 300}}
}

func TestPulseShowsThePlanBesideMeasuredCompletions(t *testing.T) {
	// 13 apps in the controller's 5-minute window: 2.6/min, 3,744 a day.
	st := runningStatus()
	st.Rolling.Completed, st.Rolling.CompletionsPerMinute, st.ProjectedPerDay, st.ProjectionBasis = 13, 2.6, 3744, controller.ProjectionBasis
	h := historyWith(map[int]int64{14: 5, 9: 4, 3: 4})
	p := DecidePulse(PulseInput{Status: st, History: h, Pending: 4120, Now: pulseNow})
	if p.CompletionsPerMin != 2.6 || p.ProjectedPerDay != 3744 || p.WindowMin != 5 || p.ProjectionBasis != controller.ProjectionBasis {
		t.Errorf("measured: %v/min over %d min, %d/day (%s)", p.CompletionsPerMin, p.WindowMin, p.ProjectedPerDay, p.ProjectionBasis)
	}
	if p.Plan != "88 items every 10 s" || p.PlannedPerMin != 528 {
		t.Errorf("plan %q, %v/min", p.Plan, p.PlannedPerMin)
	}
	if p.Stalled || p.MinutesSinceCompletion == nil || *p.MinutesSinceCompletion != 2 {
		t.Errorf("completing: stalled %v, since %v", p.Stalled, p.MinutesSinceCompletion)
	}
}

// Under a rate algorithm (probe, the default) the plan is the status's
// pace too: 40 pages a minute is 7 items paid for in 10.5 s.
func TestPulsePlanUnderARateAlgorithm(t *testing.T) {
	st := controller.Status{Running: true, BatchSize: 7, IntervalMs: 10500, LastPlan: &controller.PlanSummary{Items: 12},
		Paces: map[string]controller.HostPace{"store": {RatePerMin: 40}, "api": {RatePerMin: 3}}}
	p := DecidePulse(PulseInput{Status: st, History: historyWith(map[int]int64{3: 4}), Pending: 10, Now: pulseNow})
	if p.Plan != "7 items every 10.5 s" || p.PlannedPerMin != 40 {
		t.Errorf("plan %q, %v/min", p.Plan, p.PlannedPerMin)
	}
}

func TestPulseMarksAStall(t *testing.T) {
	quiet := historyWith(map[int]int64{40: 30, 23: 6})
	st := runningStatus()
	st.ParserHealth.PagesPaused = true
	p := DecidePulse(PulseInput{Status: st, History: quiet, Pending: 4120, Now: pulseNow})
	if !p.Stalled || *p.MinutesSinceCompletion != 22 || p.StallAfterMin != 10 || p.CompletionsPerMin != 0 || p.ProjectedPerDay != 0 {
		t.Fatalf("pulse %+v", p)
	}
	for _, want := range []string{"no app completed for 22 min", "4120 apps wait", LiftDriftPause} {
		if !strings.Contains(p.StallReason, want) {
			t.Errorf("reason %q lacks %q", p.StallReason, want)
		}
	}
	if p.LiftDriftPause != LiftDriftPause {
		t.Errorf("lift %q", p.LiftDriftPause)
	}
	// Nothing at all in the history's 6 hours: stalled for all of them.
	if p := DecidePulse(PulseInput{Status: runningStatus(), History: historyWith(nil), Pending: 5, Now: pulseNow}); !p.Stalled ||
		p.LastCompletionAt != nil || !strings.Contains(p.StallReason, "in the last 6 h") {
		t.Errorf("empty history: %+v", p)
	}
	// Not a stall: just under the bound, the controller stopped, nothing
	// waiting, or the controller's own window already has a completion (the
	// history lags its replication).
	cases := map[string]PulseInput{
		"under the bound": {Status: runningStatus(), History: historyWith(map[int]int64{10: 1}), Pending: 5, Now: pulseNow},
		"stopped":         {Status: func() controller.Status { st := runningStatus(); st.Running = false; return st }(), History: quiet, Pending: 5, Now: pulseNow},
		"nothing waits":   {Status: runningStatus(), History: quiet, Pending: 0, Now: pulseNow},
	}
	live := runningStatus()
	live.Rolling.Completed = 3
	cases["controller completed"] = PulseInput{Status: live, History: quiet, Pending: 5, Now: pulseNow}
	for name, in := range cases {
		if p := DecidePulse(in); p.Stalled {
			t.Errorf("%s: stalled (%s)", name, p.StallReason)
		}
	}
}

type statusController struct{ body string }

func (c statusController) CallController(_ context.Context, method, path string, _ []byte) (int, []byte, error) {
	if method != "GET" || path != "/status" {
		return 404, nil, nil
	}
	return 200, []byte(c.body), nil
}

type pulseLedger struct {
	fakeLedger
	h ledgerdb.History
}

func (l *pulseLedger) History(context.Context, ledgerdb.HistoryQuery) (ledgerdb.History, error) {
	return l.h, nil
}
func (l *pulseLedger) PipelineCounts(context.Context) (map[string]int64, error) {
	return map[string]int64{"apps_pending": 4120}, nil
}

func TestPulseEndpoint(t *testing.T) {
	st, _ := json.Marshal(runningStatus())
	l := &pulseLedger{h: historyWith(nil)}
	s := NewServer(&Server{Controller: statusController{body: string(st)}, Ledger: l})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/enrichment/pulse?target=main", nil))
	var p Pulse
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Pending != 4120 || p.Plan != "88 items every 10 s" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/enrichment/pulse?bucket_s=7", nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"bucket_s"`) {
		t.Errorf("bad bucket: %d %s", rec.Code, rec.Body)
	}
}

// One projection: the page showed two a day apart by ×15 (the
// controller's burst extrapolated from the minutes its window covered,
// the history's over 15 minutes). The status divides its window's
// completions by the window's 5 minutes, and the pulse, which the page
// reads, shows the status's figure and basis, not the history's.
func TestOneProjection(t *testing.T) {
	now := pulseNow.Add(30 * time.Second)
	burst := controller.State{Running: true, Metrics: []controller.Bucket{{Minute: pulseNow.UnixMilli(), Dispatched: 33, Completed: 33}}}
	st := burst.Status(now, controller.DefaultConfig())
	h := ledgerdb.BuildHistory(ledgerdb.HistoryQuery{Target: "main", Since: now.Add(-6 * time.Hour), Until: now, Bucket: time.Minute},
		[]ledgerdb.TickMinute{{Minute: pulseNow.UnixMilli(), Ticks: 3, Dispatched: 33, Completed: 33}}, nil)
	if st.Rolling.CompletionsPerMinute != 6.6 || st.ProjectedPerDay != 9504 {
		t.Errorf("controller: %v/min, %d/day", st.Rolling.CompletionsPerMinute, st.ProjectedPerDay)
	}
	body, _ := json.Marshal(st)
	s := NewServer(&Server{Controller: statusController{body: string(body)}, Ledger: &pulseLedger{h: h}})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/enrichment/pulse?target=main", nil))
	var p Pulse
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &p) != nil {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if p.ProjectedPerDay != st.ProjectedPerDay || p.ProjectionBasis != st.ProjectionBasis || p.CompletionsPerMin != 6.6 || p.WindowMin != 5 {
		t.Errorf("pulse %d/day (%s), %v/min over %d min; status %d/day, history %v/day",
			p.ProjectedPerDay, p.ProjectionBasis, p.CompletionsPerMin, p.WindowMin, st.ProjectedPerDay, h.ProjectedPerDay)
	}
}
