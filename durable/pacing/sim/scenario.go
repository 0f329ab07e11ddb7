package sim

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"storecrawl/durable/pacing"
)

// Scenario is one simulated run: the work queue and the hidden upstream.
type Scenario struct {
	Name               string  `json:"name"`
	DurationS          int     `json:"duration_s"`
	Items              int     `json:"items"`
	SubrequestsPerItem int     `json:"subrequests_per_item"`
	Seed               uint64  `json:"seed"`
	Phases             []Phase `json:"phases"`
}

// Phase is the upstream's behaviour from AtS until the next phase. Omitted
// fields are 0/false, not inherited (on_exceed defaults to "429").
type Phase struct {
	AtS            int     `json:"at_s"`
	CapacityPerMin float64 `json:"capacity_per_min"`
	// RampToPerMin > 0 makes the capacity move linearly from
	// capacity_per_min at at_s to this at the next phase's start (or the
	// end of the run): a slow rise or fall rather than a step.
	RampToPerMin               float64 `json:"ramp_to_per_min"`
	Burst                      int     `json:"burst"`
	OnExceed                   string  `json:"on_exceed"`
	RetryAfterS                int     `json:"retry_after_s"`
	BlockS                     int     `json:"block_s"`
	LatencyMS                  int     `json:"latency_ms"`
	LatencyJitterMS            int     `json:"latency_jitter_ms"`
	ErrorRate                  float64 `json:"error_rate"`
	TimeoutRate                float64 `json:"timeout_rate"`
	NotFoundRate               float64 `json:"not_found_rate"`
	RefusalsConsume            bool    `json:"refusals_consume"`
	LockoutAfterRefusalsPerMin int     `json:"lockout_after_refusals_per_min"`
	RatelimitHeaders           bool    `json:"ratelimit_headers"`
}

// The refusal statuses on_exceed may name.
const (
	exceed429 = "429"
	exceed403 = "403"
)

// Validation bounds: generous for any experiment, tight enough that a unit
// mistake (ms for s, a rate per second for per minute) is caught.
const (
	maxDurationS          = 7 * 24 * 3600
	maxItems              = 10_000_000
	maxPhases             = 1000
	maxCapacityPerMin     = 6_000_000 // 100k req/s: effectively unlimited
	maxBurst              = 100_000
	maxHoldS              = 24 * 3600 // retry_after_s, block_s
	maxLockoutRefusals    = 100_000
	maxSubrequestsPerItem = pacing.MaxSubrequestsPerTick // one item must fit a tick
)

// at is when the phase starts, from the epoch.
func (p Phase) at() time.Duration { return time.Duration(p.AtS) * time.Second }

// duration is the run's length.
func (s *Scenario) duration() time.Duration { return time.Duration(s.DurationS) * time.Second }

// phaseAt is the index of the phase in force at t (from the epoch).
func (s *Scenario) phaseAt(t time.Duration) int {
	i := 0
	for i+1 < len(s.Phases) && s.Phases[i+1].at() <= t {
		i++
	}
	return i
}

// phaseEnd is when phase i gives way to the next (the run's end for the last).
func (s *Scenario) phaseEnd(i int) time.Duration {
	if i+1 < len(s.Phases) {
		return s.Phases[i+1].at()
	}
	return s.duration()
}

// rateAt is phase i's capacity per minute at t (within the phase): its
// capacity_per_min, or the point on its ramp.
func (s *Scenario) rateAt(i int, t time.Duration) float64 {
	p := s.Phases[i]
	if p.RampToPerMin <= 0 {
		return p.CapacityPerMin
	}
	from, to := p.at(), s.phaseEnd(i)
	x := min(max(float64(t-from)/float64(to-from), 0), 1)
	return p.CapacityPerMin + x*(p.RampToPerMin-p.CapacityPerMin)
}

// capacityAt is the hidden capacity at t, for the oracle.
func (s *Scenario) capacityAt(t time.Time) float64 {
	d := t.Sub(epoch)
	return s.rateAt(s.phaseAt(d), d)
}

// FieldError names the scenario field that is wrong.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ParseScenario reads and validates one scenario; name is used when the
// file has none.
func ParseScenario(r io.Reader, name string) (*Scenario, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	// A file that omits subrequests_per_item gets the product's shape; an
	// explicit 0 still fails validation (Decode leaves absent fields as set).
	s := Scenario{SubrequestsPerItem: productShape}
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("scenario %s: trailing data after the JSON object", name)
	}
	if s.Name == "" {
		s.Name = name
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return &s, nil
}

func checkRange(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fieldErr(field, "%d is outside [%d, %d]", v, lo, hi)
	}
	return nil
}

func checkRate(field string, v float64) error {
	if v < 0 || v > 1 {
		return fieldErr(field, "%g is not a fraction in [0, 1]", v)
	}
	return nil
}

func (s *Scenario) validate() error {
	if err := errors.Join(
		checkRange("duration_s", s.DurationS, 1, maxDurationS),
		checkRange("items", s.Items, 1, maxItems),
		checkRange("subrequests_per_item", s.SubrequestsPerItem, 1, maxSubrequestsPerItem),
	); err != nil {
		return err
	}
	if len(s.Phases) == 0 || len(s.Phases) > maxPhases {
		return fieldErr("phases", "need 1 to %d phases, have %d", maxPhases, len(s.Phases))
	}
	for i := range s.Phases {
		if err := s.validatePhase(i); err != nil {
			return err
		}
	}
	return nil
}

func (s *Scenario) validatePhase(i int) error {
	p := &s.Phases[i]
	f := func(name string) string { return fmt.Sprintf("phases[%d].%s", i, name) }
	switch {
	case i == 0 && p.AtS != 0:
		return fieldErr(f("at_s"), "the first phase must start at 0, not %d", p.AtS)
	case i > 0 && p.AtS <= s.Phases[i-1].AtS:
		return fieldErr(f("at_s"), "%d is not after the previous phase's %d", p.AtS, s.Phases[i-1].AtS)
	case p.AtS >= s.DurationS:
		return fieldErr(f("at_s"), "%d is not before duration_s %d", p.AtS, s.DurationS)
	case !(p.CapacityPerMin > 0 && p.CapacityPerMin <= maxCapacityPerMin):
		return fieldErr(f("capacity_per_min"), "%g is outside (0, %d] (phases do not inherit: restate it)", p.CapacityPerMin, maxCapacityPerMin)
	case !(p.RampToPerMin >= 0 && p.RampToPerMin <= maxCapacityPerMin):
		return fieldErr(f("ramp_to_per_min"), "%g is outside [0, %d] (0 = no ramp)", p.RampToPerMin, maxCapacityPerMin)
	}
	switch p.OnExceed {
	case "":
		p.OnExceed = exceed429
	case exceed429, exceed403:
	default:
		return fieldErr(f("on_exceed"), "%q is not %q or %q", p.OnExceed, exceed429, exceed403)
	}
	// Jitter must not make a latency negative; a latency that reaches the
	// client's timeout is a timeout, which timeout_rate expresses.
	maxLatencyMS := int(requestTimeout/time.Millisecond) - 1
	if err := errors.Join(
		checkRange(f("burst"), p.Burst, 1, maxBurst),
		checkRange(f("retry_after_s"), p.RetryAfterS, 0, maxHoldS),
		checkRange(f("block_s"), p.BlockS, 0, maxHoldS),
		checkRange(f("latency_ms"), p.LatencyMS, 0, maxLatencyMS),
		checkRange(f("latency_jitter_ms"), p.LatencyJitterMS, 0, min(p.LatencyMS, maxLatencyMS-p.LatencyMS)),
		checkRate(f("error_rate"), p.ErrorRate),
		checkRate(f("timeout_rate"), p.TimeoutRate),
		checkRate(f("not_found_rate"), p.NotFoundRate),
		checkRange(f("lockout_after_refusals_per_min"), p.LockoutAfterRefusalsPerMin, 0, maxLockoutRefusals),
	); err != nil {
		return err
	}
	if p.ErrorRate+p.TimeoutRate > 1 {
		return fieldErr(f("error_rate"), "error_rate + timeout_rate = %g exceeds 1", p.ErrorRate+p.TimeoutRate)
	}
	if p.LockoutAfterRefusalsPerMin > 0 && p.BlockS == 0 {
		return fieldErr(f("block_s"), "a lockout (lockout_after_refusals_per_min) needs block_s > 0")
	}
	return nil
}

// shipped is the scenario set -scenario all runs, embedded so the binary
// works from any directory.
//
//go:embed scenarios/*.json
var shipped embed.FS

const (
	shippedDir = "scenarios"
	allFlag    = "all"
	jsonExt    = ".json"
)

// loadScenarios resolves -scenario: "all", a file on disk, or the name of
// a shipped scenario.
func loadScenarios(arg string) ([]*Scenario, error) {
	if arg == allFlag {
		return loadShipped()
	}
	if f, err := os.Open(arg); err == nil {
		defer f.Close()
		return one(ParseScenario(f, strings.TrimSuffix(path.Base(arg), jsonExt)))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	name := strings.TrimSuffix(arg, jsonExt)
	f, err := shipped.Open(path.Join(shippedDir, name+jsonExt))
	if err != nil {
		return nil, &unknownScenarioError{arg: arg, name: name}
	}
	defer f.Close()
	return one(ParseScenario(f, name))
}

// unknownScenarioError is -scenario naming neither a file nor a shipped
// scenario: a typo, which -variants reports as a usage error.
type unknownScenarioError struct{ arg, name string }

func (e *unknownScenarioError) Error() string {
	return fmt.Sprintf("no scenario file %q and no shipped scenario %q", e.arg, e.name)
}

func one(s *Scenario, err error) ([]*Scenario, error) {
	if err != nil {
		return nil, err
	}
	return []*Scenario{s}, nil
}

// loadShipped parses every shipped scenario in file-name order.
func loadShipped() ([]*Scenario, error) {
	names, err := fs.Glob(shipped, path.Join(shippedDir, "*"+jsonExt))
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, n := range names { // fs.Glob sorts
		f, err := shipped.Open(n)
		if err != nil {
			return nil, err
		}
		s, err := ParseScenario(f, strings.TrimSuffix(path.Base(n), jsonExt))
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
