package sim

import (
	"fmt"
	"io"
	"math"
)

// A scenario's seed draws its latencies, errors and not-found items; one
// seed can flatter or wrong a controller by a point or so. seedSweep runs
// every scenario under seeds 1..n and reports the default's standing
// against its best peer on each: the mean, the worst seed, and on how many
// seeds the goal holds.

// seedRow is the default controller's standing on one scenario over seeds.
type seedRow struct {
	scenario       string
	mean, min, max float64 // vs-best share
	met, seeds     int
	meanGoodput    float64
	meanRefused    float64
	worstSeed      uint64
}

// seedSweep runs each scenario with seeds 1..n under controllers (which
// must include the default and the peers) and judges every run.
func seedSweep(scenarios []*Scenario, controllers []string, n int) []seedRow {
	var rows []seedRow
	for _, sc := range scenarios {
		row := seedRow{scenario: sc.Name, min: math.Inf(1), max: math.Inf(-1)}
		for seed := uint64(1); seed <= uint64(n); seed++ {
			c := *sc
			c.Seed = seed
			var runs []Metrics
			for _, name := range controllers {
				runs = append(runs, runOne(&c, name, false))
			}
			for i, v := range verdicts(runs) {
				row.seeds++
				row.mean += v.share
				row.meanGoodput += runs[i].GoodputRatio
				row.meanRefused += runs[i].RefusedRatio
				if v.share < row.min {
					row.min, row.worstSeed = v.share, seed
				}
				row.max = math.Max(row.max, v.share)
				if v.met {
					row.met++
				}
			}
		}
		if row.seeds > 0 {
			k := float64(row.seeds)
			row.mean, row.meanGoodput, row.meanRefused = row.mean/k, row.meanGoodput/k, row.meanRefused/k
		}
		rows = append(rows, row)
	}
	return rows
}

// writeSeedTable prints the sweep, one row per scenario.
func writeSeedTable(w io.Writer, rows []seedRow, n int) error {
	fmt.Fprintf(w, "the default controller's vs-best share (its goodput / the best peer's) over seeds 1..%d\n\n", n)
	tw := newTable(w)
	fmt.Fprintln(tw, "scenario\tmean goodput%\tmean refused%\tvs-best mean\tmin\tmax\tworst seed\tgoal met")
	met := 0
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%.3f\t%.3f\t%.3f\t%d\t%d of %d\n",
			r.scenario, percent*r.meanGoodput, percent*r.meanRefused, r.mean, r.min, r.max, r.worstSeed, r.met, r.seeds)
		if r.met == r.seeds && r.seeds > 0 {
			met++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\ngoal met on every seed on %d of %d scenarios\n", met, len(rows))
	return err
}
