package sim

import (
	"encoding/json"
	"io/fs"
	"math"
	"path"
	"reflect"
	"strings"
	"testing"
)

// variantsPerTest is how many variants of each family the range test draws.
const variantsPerTest = 40

// capacityTolerance absorbs variantCapacityStep's rounding in a ratio check.
const capacityTolerance = 1.01

func TestVariantsStayInTheirRanges(t *testing.T) {
	families, err := loadShipped()
	if err != nil {
		t.Fatal(err)
	}
	seenShape := map[int]bool{}
	for _, fam := range families {
		for _, seed := range []uint64{1, 2} {
			for i := range variantsPerTest {
				v, err := newVariant(fam, seed, i)
				if err != nil {
					t.Fatalf("%s seed %d #%d: %v", fam.Name, seed, i, err)
				}
				checkVariant(t, fam, v, i)
				seenShape[v.SubrequestsPerItem] = true
			}
		}
	}
	for s := variantMinShape; s <= variantMaxShape; s++ {
		if !seenShape[s] {
			t.Errorf("no variant at %d requests per item", s)
		}
	}
}

func checkVariant(t *testing.T, fam, v *Scenario, i int) {
	t.Helper()
	if v.SubrequestsPerItem != 1+i%4 || v.Name != variantName(fam.Name, i) || v.Items != fam.Items || len(v.Phases) != len(fam.Phases) {
		t.Fatalf("%s: shape %d, name %q, items %d, %d phases", fam.Name, v.SubrequestsPerItem, v.Name, v.Items, len(v.Phases))
	}
	if len(fam.Phases) == 1 && v.DurationS != fam.DurationS {
		t.Errorf("%s: a single-phase family's duration moved: %d", v.Name, v.DurationS)
	}
	burst := v.Phases[0].Burst
	background := v.Phases[0].ErrorRate - fam.Phases[0].ErrorRate
	for k, p := range v.Phases {
		f := fam.Phases[k]
		end := v.DurationS
		if k+1 < len(v.Phases) {
			end = v.Phases[k+1].AtS
		}
		if len(fam.Phases) > 1 && (end-p.AtS < variantMinPhaseS || end-p.AtS > variantMaxPhaseS) {
			t.Errorf("%s phase %d lasts %d s", v.Name, k, end-p.AtS)
		}
		if p.Burst != burst || burst < variantMinBurst || burst > variantMaxBurst {
			t.Errorf("%s phase %d: burst %d (phase 0: %d)", v.Name, k, p.Burst, burst)
		}
		if bg := p.ErrorRate - f.ErrorRate; p.ErrorRate < 1-f.TimeoutRate && (math.Abs(bg-background) > 1e-9 || bg < 0 || bg >= variantMaxBackgroundErrors) {
			t.Errorf("%s phase %d: background 5xx %g (phase 0: %g)", v.Name, k, bg, background)
		}
		if f.LatencyMS > variantMaxLatencyMS {
			if p.LatencyMS != f.LatencyMS || p.LatencyJitterMS != f.LatencyJitterMS {
				t.Errorf("%s phase %d: a high-latency family's latency moved: %d±%d", v.Name, k, p.LatencyMS, p.LatencyJitterMS)
			}
		} else if p.LatencyMS < variantMinLatencyMS || p.LatencyMS > variantMaxLatencyMS || p.LatencyJitterMS > p.LatencyMS {
			t.Errorf("%s phase %d: latency %d±%d", v.Name, k, p.LatencyMS, p.LatencyJitterMS)
		}
		// What the variants do not draw stays the family's.
		if p.OnExceed != f.OnExceed || p.RetryAfterS != f.RetryAfterS || p.BlockS != f.BlockS ||
			p.TimeoutRate != f.TimeoutRate || p.NotFoundRate != f.NotFoundRate || p.RefusalsConsume != f.RefusalsConsume ||
			p.LockoutAfterRefusalsPerMin != f.LockoutAfterRefusalsPerMin || p.RatelimitHeaders != f.RatelimitHeaders ||
			(p.RampToPerMin > 0) != (f.RampToPerMin > 0) {
			t.Errorf("%s phase %d changed an undrawn field:\n%+v\nfrom %+v", v.Name, k, p, f)
		}
	}
	checkCapacities(t, v.Name, capacities(fam), capacities(v))
}

// capacities is a scenario's capacity values in order, ramp ends included.
func capacities(sc *Scenario) []float64 {
	var out []float64
	for _, p := range sc.Phases {
		out = append(out, p.CapacityPerMin)
		if p.RampToPerMin > 0 {
			out = append(out, p.RampToPerMin)
		}
	}
	return out
}

func checkCapacities(t *testing.T, name string, file, drawn []float64) {
	t.Helper()
	if r := drawn[0] / file[0]; drawn[0] > variantMinCapacityPerMin && (r < 1/variantMaxStep/capacityTolerance || r > variantMaxStep*capacityTolerance) {
		t.Errorf("%s: first capacity ×%.3f of the file's", name, r)
	}
	for k := 1; k < len(file); k++ {
		step := drawn[k] / drawn[k-1]
		var ok bool
		switch {
		case file[k] > file[k-1]:
			ok = step >= 1 && step <= variantMaxStep*capacityTolerance
		case file[k] < file[k-1]:
			ok = step <= 1 && (step >= 1/variantMaxStep/capacityTolerance || drawn[k] == variantMinCapacityPerMin)
		default:
			ok = step == 1
		}
		if !ok {
			t.Errorf("%s: capacity %d steps ×%.3f where the file steps ×%.3f", name, k, step, file[k]/file[k-1])
		}
	}
}

func TestVariantsAreDeterministicBySeed(t *testing.T) {
	families, err := loadShipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		a, _ := newVariant(fam, 7, 3)
		b, _ := newVariant(fam, 7, 3)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: seed 7 drew two different variants #3", fam.Name)
		}
		c, _ := newVariant(fam, 8, 3)
		if reflect.DeepEqual(a, c) {
			t.Errorf("%s: seeds 7 and 8 drew the same variant #3", fam.Name)
		}
		if a.Seed == c.Seed || a.Phases[0].CapacityPerMin == c.Phases[0].CapacityPerMin {
			t.Errorf("%s: seeds 7 and 8 share draws: %d %d", fam.Name, a.Seed, c.Seed)
		}
	}
}

func TestShapeOverrideChangesOnlySubrequestsPerItem(t *testing.T) {
	families, err := loadShipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range families {
		before := *sc
		before.Phases = append([]Phase(nil), sc.Phases...)
		for _, n := range []shape{0, 1, 4} {
			got := sc.withShape(n)
			want := n
			if n == 0 {
				want = shape(sc.SubrequestsPerItem)
			}
			if got.SubrequestsPerItem != int(want) {
				t.Errorf("%s at %v: %d requests per item", sc.Name, n, got.SubrequestsPerItem)
			}
			got.SubrequestsPerItem = sc.SubrequestsPerItem
			if !reflect.DeepEqual(got, sc) {
				t.Errorf("%s at %v changed more than subrequests_per_item:\n%+v\nfrom %+v", sc.Name, n, got, sc)
			}
			got.Phases[0].Burst++ // a copy: the shipped scenario is untouched
			if !reflect.DeepEqual(&before, sc) {
				t.Fatalf("%s: withShape shares its phases", sc.Name)
			}
		}
	}
}

func TestParseShapes(t *testing.T) {
	got, err := parseShapes("file, 1,4,1")
	if err != nil || !reflect.DeepEqual(got, []shape{0, 1, 4}) {
		t.Errorf("file,1,4,1: %v %v", got, err)
	}
	for _, bad := range []string{"", " , ", "0", "x", "801"} {
		if _, err := parseShapes(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// A scenario file without subrequests_per_item runs at the product's
// shape; every shipped file states its own, so none of them changes.
func TestOmittedShapeIsTheProductsAndNoShippedFileOmitsIt(t *testing.T) {
	s, err := parse(t, strings.Replace(validJSON, `"subrequests_per_item": 4, `, "", 1))
	if err != nil || s.SubrequestsPerItem != productShape {
		t.Errorf("omitted: %v %v", s, err)
	}
	names, err := fs.Glob(shipped, path.Join(shippedDir, "*"+jsonExt))
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	for _, n := range names {
		raw, _ := fs.ReadFile(shipped, n)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(n, err)
		}
		if _, ok := m["subrequests_per_item"]; !ok {
			t.Errorf("%s omits subrequests_per_item", n)
		}
	}
}

func TestHoldFamilies(t *testing.T) {
	families, _ := loadShipped()
	var hold []string
	for _, sc := range families {
		if holdFamily(sc) {
			hold = append(hold, sc.Name)
		}
	}
	want := []string{"lockout", "retry-after", "rise-retry-after", "storm-403"}
	if !reflect.DeepEqual(hold, want) {
		t.Errorf("hold families %v, want %v", hold, want)
	}
}

func TestGoalChecks(t *testing.T) {
	r := &familyRow{Hold: true, Base: standing{VsBest: 0.95, VsOracle: 0.7, Refused: 0.01},
		MeanAtProduct: 0.96, WorstAtProduct: 0.85, RefusedMeanAtProduct: 0.03}
	var missed []string
	for _, g := range familyGoals(r) {
		if !g.Met {
			missed = append(missed, g.Goal)
		}
	}
	if !reflect.DeepEqual(missed, []string{"base ÷oracle", "refused@1"}) {
		t.Errorf("missed %v", missed)
	}
	r.Hold = false
	if len(familyGoals(r)) != 5 {
		t.Errorf("a family without holds has %d goals", len(familyGoals(r)))
	}
}
