package sim

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"
)

// variantReport is -variants' result; the JSON keys are -variants -json's.
type variantReport struct {
	Variants int         `json:"variants_per_family"`
	Seed     uint64      `json:"seed"`
	Runs     int         `json:"runs"`
	Workers  int         `json:"workers"`
	WallS    float64     `json:"wall_s"`
	Families []familyRow `json:"families"`
}

// variantsGCPercent trades memory (a few MB per worker) for time in
// -variants: each run allocates its outcomes afresh, and at the default 100
// the collector takes a sizeable share of the CPU.
const variantsGCPercent = 400

// variantOpts are -variants' settings: n variants of every family under
// seed, printed as JSON or a table, with every variant's row when list.
type variantOpts struct {
	n            int
	seed         uint64
	asJSON, list bool
}

// sweepVariants runs -variants: opt.n variants of every family under
// opt.seed, each under controllers with the default and its peers, on
// every core.
func sweepVariants(stdout, stderr io.Writer, families []*Scenario, controllers []string, opt variantOpts) int {
	n, seed := opt.n, opt.seed
	if n > maxVariants {
		fmt.Fprintf(stderr, "simulate: -variants %d: at most %d\n", n, maxVariants)
		return exitUsage
	}
	start := time.Now()
	defer debug.SetGCPercent(debug.SetGCPercent(variantsGCPercent))
	jobs, err := variantJobs(families, n, seed)
	if err != nil {
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return exitError
	}
	ctls := withPeers(controllers)
	res := runVariantJobs(jobs, ctls)
	rows := familyRows(families, jobs, res)
	if opt.list {
		listVariants(rows, jobs, res) // the table's own runs: nothing reruns
	}
	rep := variantReport{
		Variants: n, Seed: seed, Runs: len(jobs) * len(ctls), Workers: variantWorkers(),
		Families: rows, WallS: time.Since(start).Seconds(),
	}
	if opt.asJSON {
		err = writeJSON(stdout, rep)
	} else if err = writeVariantTable(stdout, rep); err == nil && opt.list {
		err = writeVariantList(stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return exitError
	}
	return exitOK
}

// variantRanges describes the draws for the header.
var variantRanges = fmt.Sprintf("requests per item %d..%d in turn; background 5xx 0–%.0f %%; burst %d–%d; "+
	"phase length %d–%d min (families with phase changes);\ncapacity ×%.2f–×%.0f, each later change ×1–×%.0f in the family's direction; "+
	"latency %d–%d ms (families above %d ms keep theirs)",
	variantMinShape, variantMaxShape, percent*variantMaxBackgroundErrors, variantMinBurst, variantMaxBurst,
	variantMinPhaseS/60, variantMaxPhaseS/60, 1/variantMaxStep, variantMaxStep, variantMaxStep,
	variantMinLatencyMS, variantMaxLatencyMS, variantMaxLatencyMS)

// writeVariantTable prints one row per family, then a goal line per family.
func writeVariantTable(w io.Writer, rep variantReport) error {
	fmt.Fprintf(w, "the default controller over %d variants of each family, seed %d\n", rep.Variants, rep.Seed)
	fmt.Fprintf(w, "variants: %s\n", variantRanges)
	fmt.Fprintf(w, "vs-best = default goodput / the best of %s on the same variant; ÷oracle = default / oracle goodput\n"+
		"(families where a refusal costs a block or a Retry-After hold); base = the shipped scenario at 1 request per item;\n"+
		"@1 = the variants at 1 request per item; refused%% = the default's refused / sent over the variants.\n\n",
		strings.Join(peerAlgorithms, ", "))
	tw := newTable(w)
	fmt.Fprintln(tw, "family\tbase vs-best\tbase ÷oracle\tmean\tworst\tworst variant\tmean@1\tworst@1\t÷oracle mean\t÷oracle worst\trefused% mean\trefused% max")
	for _, r := range rep.Families {
		baseOracle, oracleMean, oracleWorst := "-", "-", "-"
		if r.Hold {
			baseOracle = fmt.Sprintf("%.3f", r.Base.VsOracle)
			oracleMean, oracleWorst = fmt.Sprintf("%.3f", r.OracleMean), fmt.Sprintf("%.3f", r.OracleWorst)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%.3f\t%.3f\t%s\t%.3f\t%.3f\t%s\t%s\t%.2f\t%.2f\n",
			r.Family, r.Base.VsBest, baseOracle, r.Mean, r.Worst, r.WorstVariant, r.MeanAtProduct, r.WorstAtProduct,
			oracleMean, oracleWorst, percent*r.RefusedMean, percent*r.RefusedMax)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ngoals at 1 request per item: base vs-best ≥ %.2f; hold families base ÷oracle ≥ %.2f; "+
		"variants at 1: mean ≥ %.2f, worst ≥ %.2f; refused ≤ %.0f %%\n",
		goalShare, goalHoldVsOracle, goalVariantMean, goalVariantWorst, percent*goalRefused)
	tw = newTable(w)
	met := 0
	for _, r := range rep.Families {
		if r.Met {
			met++
			fmt.Fprintf(tw, "%s\tmet\n", r.Family)
			continue
		}
		var missed []string
		for _, g := range r.Goals {
			if !g.Met {
				missed = append(missed, g.String())
			}
		}
		fmt.Fprintf(tw, "%s\tNOT MET: %s\n", r.Family, strings.Join(missed, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	errs := 0
	for _, r := range rep.Families {
		errs += r.Errors
	}
	if errs > 0 {
		fmt.Fprintf(w, "\n%d variants failed to run (see -json)\n", errs)
	}
	_, err := fmt.Fprintf(w, "\ngoals met on %d of %d families\nwall time %s (%d runs on %d workers)\n",
		met, len(rep.Families), (time.Duration(rep.WallS * float64(time.Second))).Round(100*time.Millisecond), rep.Runs, rep.Workers)
	return err
}
