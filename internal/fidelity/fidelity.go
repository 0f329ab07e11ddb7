// Package fidelity compares the EnrichmentController's live pacing (the
// real controller under `wrangler dev` against cmd/upstream-sim) with what
// cmd/simulate predicts for the same scenario: the live run
// steps the simulator's store-host limit through the scenario's phases
// (POST /__config) and samples its counters; both sides are summarised the
// same way, by the definitions of durable/pacing/sim (goodput against the
// capacity allowed, recovery after each change).
package fidelity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"time"
)

// The recovery criteria of durable/pacing/sim: a window of RecoveryWindow
// wholly in the new phase that served at least RecoveryShare of the ideal
// with under RecoveryMaxRefused of its answers refused.
const (
	RecoveryWindow     = 60 * time.Second
	RecoveryShare      = 0.9
	RecoveryMaxRefused = 0.02
	// MaxConnections bounds an ideal client at the latency, as in the sim
	// (pacing.MaxConnections: a Worker invocation's simultaneous fetches).
	MaxConnections = 6
	// Tolerance is how far the live goodput may be from the prediction
	// for the simulator to count as faithful.
	Tolerance = 0.15
	// apiFreePerMin keeps the API host (lookups) out of the way: the
	// scenario is the store host's (pages), one request per item.
	apiFreePerMin, apiFreeBurst = 6000, 100
)

// ScenarioFile is the live-fidelity scenario, from the repository's root:
// the store host's limit at 120/min, ×4 after 3 minutes, ÷4 after 6, with
// the simulator's default latency (cmd/simulate -scenario takes the file).
const ScenarioFile = "internal/fidelity/live-steps.json"

// Scenario is the part of a cmd/simulate scenario file the live run
// reproduces.
type Scenario struct {
	Name      string  `json:"name"`
	DurationS int     `json:"duration_s"`
	Phases    []Phase `json:"phases"`
}

// Phase is one phase of the hidden limit.
type Phase struct {
	AtS            int     `json:"at_s"`
	CapacityPerMin float64 `json:"capacity_per_min"`
	Burst          int     `json:"burst"`
	LatencyMS      int     `json:"latency_ms"`
}

// Load reads a scenario file.
func Load(path string) (Scenario, error) {
	var sc Scenario
	b, err := os.ReadFile(path)
	if err != nil {
		return sc, err
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return sc, fmt.Errorf("%s: %w", path, err)
	}
	if len(sc.Phases) == 0 || sc.Phases[0].AtS != 0 || sc.DurationS <= 0 {
		return sc, fmt.Errorf("%s: a scenario needs phases from at_s 0 and a duration", path)
	}
	return sc, nil
}

// end is when phase i ends (the next phase's start, or the run's end).
func (sc Scenario) end(i int) int {
	if i+1 < len(sc.Phases) {
		return sc.Phases[i+1].AtS
	}
	return sc.DurationS
}

// idealPerSec is what an ideal client is served per second in p.
func idealPerSec(p Phase) float64 {
	r := p.CapacityPerMin / 60
	if p.LatencyMS > 0 {
		r = math.Min(r, MaxConnections/(float64(p.LatencyMS)/1000))
	}
	return r
}

// PhaseResult is one phase's goodput: OK answers against what the phase
// allowed (its ideal rate over its length, plus the first phase's burst).
type PhaseResult struct {
	AtS, ToS       int
	CapacityPerMin float64
	OK, Refused    int64
	Allowed        float64
	Goodput        float64
}

// Result is one side of the comparison.
type Result struct {
	Source    string
	Phases    []PhaseResult
	RecoveryS []int // per change, -1: not within the phase
	Goodput   float64
	Refused   float64 // share of answers refused
}

// Sample is the store host's counters at At since the run began.
type Sample struct {
	At          time.Duration
	OK, Refused int64
}

// Live summarises samples (ascending, the first at 0) of a live run.
func Live(sc Scenario, samples []Sample) Result {
	r := Result{Source: "live"}
	at := func(s int) Sample { // the last sample at or before s seconds
		var last Sample
		for _, x := range samples {
			if x.At > time.Duration(s)*time.Second {
				break
			}
			last = x
		}
		return last
	}
	var ok, refused int64
	allowed := float64(sc.Phases[0].Burst)
	for i, p := range sc.Phases {
		from, to := at(p.AtS), at(sc.end(i))
		pr := PhaseResult{AtS: p.AtS, ToS: sc.end(i), CapacityPerMin: p.CapacityPerMin, OK: to.OK - from.OK, Refused: to.Refused - from.Refused}
		pr.Allowed = idealPerSec(p) * float64(sc.end(i)-p.AtS)
		if i == 0 {
			pr.Allowed += float64(p.Burst)
		}
		pr.Goodput = ratio(float64(pr.OK), pr.Allowed)
		r.Phases = append(r.Phases, pr)
		ok, refused, allowed = ok+pr.OK, refused+pr.Refused, allowed+idealPerSec(p)*float64(sc.end(i)-p.AtS)
	}
	r.Goodput, r.Refused = ratio(float64(ok), allowed), ratio(float64(refused), float64(ok+refused))
	for i := 1; i < len(sc.Phases); i++ {
		p := sc.Phases[i]
		target := RecoveryShare * idealPerSec(p) * RecoveryWindow.Seconds()
		got := -1
		for _, hi := range samples {
			s := hi.At - time.Duration(p.AtS)*time.Second
			if s < RecoveryWindow || hi.At > time.Duration(sc.end(i))*time.Second {
				continue
			}
			lo := at(int((hi.At - RecoveryWindow) / time.Second))
			okW, refW := float64(hi.OK-lo.OK), float64(hi.Refused-lo.Refused)
			if okW >= target && refW < RecoveryMaxRefused*(okW+refW) {
				got = int(s / time.Second)
				break
			}
		}
		r.RecoveryS = append(r.RecoveryS, got)
	}
	return r
}

// simMetrics is the part of `cmd/simulate -json -trace` read here.
type simMetrics struct {
	GoodputRatio float64 `json:"goodput_ratio"`
	RefusedRatio float64 `json:"refused_ratio"`
	RecoveryS    []int   `json:"recovery_s"`
	Trace        []struct {
		Minute  int   `json:"minute"`
		OK      int64 `json:"ok"`
		Refused int64 `json:"refused"`
	} `json:"trace"`
}

// Simulated summarises cmd/simulate's -json -trace output for sc, whose
// phases start on whole minutes (the trace's grain).
func Simulated(sc Scenario, out []byte) (Result, error) {
	var m simMetrics
	if err := json.Unmarshal(out, &m); err != nil {
		return Result{}, fmt.Errorf("cmd/simulate output: %w", err)
	}
	r := Result{Source: "cmd/simulate", RecoveryS: m.RecoveryS, Goodput: m.GoodputRatio, Refused: m.RefusedRatio}
	for i, p := range sc.Phases {
		if p.AtS%60 != 0 {
			return r, fmt.Errorf("phase %d starts at %d s: not on a minute", i, p.AtS)
		}
		pr := PhaseResult{AtS: p.AtS, ToS: sc.end(i), CapacityPerMin: p.CapacityPerMin}
		for _, row := range m.Trace {
			if row.Minute*60 >= p.AtS && row.Minute*60 < sc.end(i) {
				pr.OK += row.OK
				pr.Refused += row.Refused
			}
		}
		pr.Allowed = idealPerSec(p) * float64(sc.end(i)-p.AtS)
		if i == 0 {
			pr.Allowed += float64(p.Burst)
		}
		pr.Goodput = ratio(float64(pr.OK), pr.Allowed)
		r.Phases = append(r.Phases, pr)
	}
	return r, nil
}

func ratio(n, d float64) float64 {
	if d <= 0 {
		return 0
	}
	return n / d
}

// Within reports whether live's goodput is within Tolerance of sim's,
// overall and in every phase.
func Within(live, sim Result) bool {
	close := func(a, b float64) bool { return b > 0 && math.Abs(a-b) <= Tolerance*b }
	if !close(live.Goodput, sim.Goodput) || len(live.Phases) != len(sim.Phases) {
		return false
	}
	for i := range live.Phases {
		if !close(live.Phases[i].Goodput, sim.Phases[i].Goodput) {
			return false
		}
	}
	return true
}

// Table prints the two results side by side.
func Table(w io.Writer, sc Scenario, live, sim Result) {
	fmt.Fprintf(w, "%-26s %12s %12s %10s\n", sc.Name+": store-host limit", "live", "cmd/simulate", "live÷sim")
	for i := range live.Phases {
		l, s := live.Phases[i], sim.Phases[i]
		fmt.Fprintf(w, "%-26s %11.1f%% %11.1f%% %10.2f   (%d ok, %d refused live; %d ok, %d refused simulated)\n",
			fmt.Sprintf("%d–%d s at %g/min", l.AtS, l.ToS, l.CapacityPerMin), 100*l.Goodput, 100*s.Goodput, ratio(l.Goodput, s.Goodput),
			l.OK, l.Refused, s.OK, s.Refused)
	}
	fmt.Fprintf(w, "%-26s %11.1f%% %11.1f%% %10.2f\n", "goodput, whole run", 100*live.Goodput, 100*sim.Goodput, ratio(live.Goodput, sim.Goodput))
	fmt.Fprintf(w, "%-26s %11.1f%% %11.1f%%\n", "refused", 100*live.Refused, 100*sim.Refused)
	fmt.Fprintf(w, "%-26s %12v %12v   (s after each change; -1 = not within the phase)\n", "recovery", live.RecoveryS, sim.RecoveryS)
	verdict := "yes"
	if !Within(live, sim) {
		verdict = "no"
	}
	fmt.Fprintf(w, "%-26s %12s   (goodput within %.0f%%, overall and per phase)\n", "prediction holds", verdict, 100*Tolerance)
}

// Drive runs sc live: from start it sets each phase's store-host limit on
// the simulator at simBase (the API host kept free), and samples the
// simulator's store-host counters every every until the scenario ends. The
// simulator's limit for phase 0 should already be set when the controller
// starts; Drive sets it again at 0.
func Drive(ctx context.Context, simBase string, sc Scenario, start time.Time, every time.Duration) ([]Sample, error) {
	var samples []Sample
	next := 0
	for {
		elapsed := time.Since(start)
		for next < len(sc.Phases) && elapsed >= time.Duration(sc.Phases[next].AtS)*time.Second {
			p := sc.Phases[next]
			if err := SetStoreLimit(ctx, simBase, p); err != nil {
				return samples, err
			}
			next++
		}
		ok, refused, err := storeCounters(ctx, simBase)
		if err != nil {
			return samples, err
		}
		samples = append(samples, Sample{At: elapsed, OK: ok, Refused: refused})
		if elapsed >= time.Duration(sc.DurationS)*time.Second {
			return samples, nil
		}
		wait := min(every, time.Until(start.Add(time.Duration(sc.DurationS)*time.Second)))
		if next < len(sc.Phases) {
			wait = min(wait, time.Until(start.Add(time.Duration(sc.Phases[next].AtS)*time.Second)))
		}
		select {
		case <-ctx.Done():
			return samples, ctx.Err()
		case <-time.After(max(wait, 0)):
		}
	}
}

// SetStoreLimit gives the simulator's store host p's limit and latency,
// the API host a limit out of the way.
func SetStoreLimit(ctx context.Context, simBase string, p Phase) error {
	body, _ := json.Marshal(map[string]any{"store_rate_per_min": int(p.CapacityPerMin), "store_burst": p.Burst,
		"rate_per_min": apiFreePerMin, "burst": apiFreeBurst, "latency_ms": p.LatencyMS})
	req, _ := http.NewRequestWithContext(ctx, "POST", simBase+"/__config", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("simulator config: %d %s", resp.StatusCode, b)
	}
	return nil
}

// storeCounters reads the store host's served and refused requests.
func storeCounters(ctx context.Context, simBase string) (ok, refused int64, err error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", simBase+"/__stats", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var st struct {
		ByHost map[string]struct {
			Served  int64 `json:"served"`
			Refused int64 `json:"refused"`
		} `json:"by_host"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, 0, err
	}
	h := st.ByHost["store"]
	return h.Served, h.Refused, nil
}
