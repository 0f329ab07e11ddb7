package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// A shipped scenario is one point of its family. -variants N draws N
// random variants of every family (deterministic from -seed) and reports
// the default controller's mean and worst standing over them, so a tune
// that fits the shipped points but not their neighbourhood shows.

// The ranges a variant is drawn from.
const (
	// variantMinShape..variantMaxShape requests per item, in turn (variant
	// i sends 1 + i mod 4), so every N ≥ 4 has a quarter at each shape and
	// variant 0 is at the product's shape.
	variantMinShape = productShape
	variantMaxShape = 4
	// variantMaxBackgroundErrors: a 5xx rate in [0, 2 %) added to every
	// phase's own error_rate (capped so error_rate + timeout_rate ≤ 1).
	variantMaxBackgroundErrors = 0.02
	// variantRateStep rounds the drawn error rate (0.01 %).
	variantRateStep = 0.0001
	// variantMinBurst..variantMaxBurst: every phase's burst.
	variantMinBurst = 5
	variantMaxBurst = 60
	// variantMinPhaseS..variantMaxPhaseS: each phase's length in a family
	// with phase changes (the run is their sum); a single-phase family
	// keeps its duration.
	variantMinPhaseS = 5 * 60
	variantMaxPhaseS = 30 * 60
	// variantMaxStep: the first phase's capacity is the file's × [1/4, 4]
	// (log-uniform), and each later capacity change (a step, or a ramp's
	// end) keeps the family's direction with a magnitude in ×[1, 4]; an
	// unchanged capacity stays unchanged.
	variantMaxStep = 4.0
	// variantMinCapacityPerMin floors a drawn capacity (steady-20 × 1/4
	// with a falling step could otherwise reach a fraction of a request).
	variantMinCapacityPerMin = 1.0
	// variantCapacityStep rounds drawn capacities (a readable worst_scenario).
	variantCapacityStep = 0.1
	// variantMinLatencyMS..variantMaxLatencyMS: every phase's latency,
	// its jitter scaled to keep the file's jitter/latency ratio. A family
	// whose latency is above the range (high-latency, slow-noisy) keeps it:
	// the latency is what that family tests.
	variantMinLatencyMS = 20
	variantMaxLatencyMS = 500
	// maxVariants bounds -variants: each variant runs every controller.
	maxVariants = 1000
)

// newVariantRand is variant i of family's random stream under seed: the
// family's name (not its position) keys it, so adding a family changes no
// other family's variants.
func newVariantRand(seed uint64, family string, i int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(family))
	return rand.New(rand.NewPCG(seed, h.Sum64()^uint64(i)*0x9e3779b97f4a7c15))
}

// logUniform draws in [lo, hi] evenly on a log scale (×2 as likely as ×½).
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return lo * math.Exp(r.Float64()*math.Log(hi/lo))
}

// variantSep joins a family's name and a variant's index in its name.
const variantSep = "#"

// variantName names variant i of family (the table's worst-variant column).
func variantName(family string, i int) string { return family + variantSep + strconv.Itoa(i) }

// loadScenarioOrVariant resolves -scenario as loadScenarios does, and a
// variant's name as -variants prints it ("retry-after#56": variant 56 of
// the shipped family, or of a scenario file, drawn under seed), so the
// worst variant of a sweep can be rerun and traced.
func loadScenarioOrVariant(arg string, seed uint64) ([]*Scenario, error) {
	family, index, found := strings.Cut(arg, variantSep)
	if !found {
		return loadScenarios(arg)
	}
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= maxVariants {
		return nil, fmt.Errorf("-scenario %q: a variant is family#i with 0 ≤ i < %d", arg, maxVariants)
	}
	scs, err := loadScenarios(family)
	if err != nil {
		return nil, err
	}
	v, err := newVariant(scs[0], seed, i)
	if err != nil {
		return nil, err
	}
	return []*Scenario{v}, nil
}

// newVariant draws variant i of family under seed; it is a valid scenario.
func newVariant(family *Scenario, seed uint64, i int) (*Scenario, error) {
	r := newVariantRand(seed, family.Name, i)
	v := family.withShape(shape(variantMinShape + i%(variantMaxShape-variantMinShape+1)))
	v.Name = variantName(family.Name, i)
	v.Seed = r.Uint64N(math.MaxUint32) + 1
	background := math.Floor(r.Float64()*variantMaxBackgroundErrors/variantRateStep) * variantRateStep
	burst := variantMinBurst + r.IntN(variantMaxBurst-variantMinBurst+1)
	latency := variantMinLatencyMS + r.IntN(variantMaxLatencyMS-variantMinLatencyMS+1)
	if len(v.Phases) > 1 {
		at := 0
		for k := range v.Phases {
			v.Phases[k].AtS = at
			at += variantMinPhaseS + r.IntN(variantMaxPhaseS-variantMinPhaseS+1)
		}
		v.DurationS = at
	}
	drawCapacities(r, family.Phases, v.Phases)
	for k := range v.Phases {
		p := &v.Phases[k]
		p.Burst = burst
		p.ErrorRate = min(p.ErrorRate+background, 1-p.TimeoutRate)
		if p.LatencyMS <= variantMaxLatencyMS {
			jitter := 0.0
			if p.LatencyMS > 0 {
				jitter = float64(p.LatencyJitterMS) / float64(p.LatencyMS)
			}
			p.LatencyMS = latency
			p.LatencyJitterMS = min(int(math.Round(jitter*float64(latency))), latency)
		}
	}
	return v, v.validate()
}

// drawCapacities sets to's capacities (and ramp ends) from from's: the
// first scaled ×[1/4, 4], each later change redrawn in its direction.
func drawCapacities(r *rand.Rand, from []Phase, to []Phase) {
	var prevFile, prevNew float64
	next := func(file float64) float64 {
		var v float64
		switch {
		case prevFile == 0:
			v = file * logUniform(r, 1/variantMaxStep, variantMaxStep)
		case file > prevFile:
			v = prevNew * logUniform(r, 1, variantMaxStep)
		case file < prevFile:
			v = prevNew / logUniform(r, 1, variantMaxStep)
		default:
			v = prevNew
		}
		v = min(max(math.Round(v/variantCapacityStep)*variantCapacityStep, variantMinCapacityPerMin), maxCapacityPerMin)
		prevFile, prevNew = file, v
		return v
	}
	for k, p := range from {
		to[k].CapacityPerMin = next(p.CapacityPerMin)
		if p.RampToPerMin > 0 {
			to[k].RampToPerMin = next(p.RampToPerMin)
		}
	}
}

// holdFamily reports whether a refusal on sc costs a block or a
// Retry-After hold: there the default is also judged against the oracle.
func holdFamily(sc *Scenario) bool {
	for _, p := range sc.Phases {
		if p.BlockS > 0 || p.RetryAfterS > 0 {
			return true
		}
	}
	return false
}

// standing is the default controller's result on one scenario.
type standing struct {
	Shape    int     `json:"subrequests_per_item"`
	VsBest   float64 `json:"vs_best"`   // default goodput / best peer's
	VsOracle float64 `json:"vs_oracle"` // default goodput / oracle's
	Refused  float64 `json:"refused_ratio"`
	BestPeer string  `json:"best_peer"`
	ok       bool    // the default and a peer ran without error
}

// standOn runs controllers (with the default and its peers) on sc.
func standOn(sc *Scenario, controllers []string) standing {
	st := standing{Shape: sc.SubrequestsPerItem}
	var runs []Metrics
	for _, name := range controllers {
		runs = append(runs, runOne(sc, name, false))
	}
	var oracle float64
	for _, m := range runs {
		if m.Error == "" && m.Algorithm == oracleName {
			oracle = m.GoodputRatio
		}
	}
	for i, v := range verdicts(runs) {
		st.VsBest, st.Refused, st.BestPeer, st.ok = v.share, runs[i].RefusedRatio, v.best.Algorithm, true
		st.VsOracle = 1
		if oracle > 0 {
			st.VsOracle = runs[i].GoodputRatio / oracle
		}
	}
	return st
}

// variantJob is one scenario to stand the default on: a family's base
// (variant < 0: the shipped scenario at the product's shape) or a variant.
type variantJob struct {
	family, variant int
	sc              *Scenario
}

// variantWorkers is how many variants run at once: one per core Go may use.
func variantWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }

// runVariantJobs stands the default on every job, GOMAXPROCS at a time;
// results are in job order whatever the scheduling.
func runVariantJobs(jobs []variantJob, controllers []string) []standing {
	out := make([]standing, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range variantWorkers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				out[j] = standOn(jobs[j].sc, controllers)
			}
		}()
	}
	for j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return out
}
