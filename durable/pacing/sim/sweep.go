package sim

import (
	"fmt"
	"io"
	"strings"

	"storecrawl/durable/pacing"
)

// -sweep runs one tuning constant of the default controller over several
// values, every scenario under seeds 1..n at each, and prints the default's
// standing side by side: how a constant trades one family against another
// shows in one table, not in a rebuild per value.

// defaultSweepSeeds is -sweep's seeds unless -seeds sets them.
const defaultSweepSeeds = 5

// maxSweepValues bounds -sweep: each value reruns every scenario n times.
const maxSweepValues = 10

// sweepColumn is one value of the swept field: its label and the
// default's tuned controller name.
type sweepColumn struct {
	label, controller string
}

// sweepColumns parses spec ("Field=v1,v2") on top of tuning (-params).
func sweepColumns(tuning, spec string) ([]sweepColumn, error) {
	field, list, ok := strings.Cut(spec, "=")
	field = strings.TrimSpace(field)
	values := splitNames(list)
	if !ok || field == "" || len(values) == 0 {
		return nil, fmt.Errorf("-sweep %q: want Field=value,value", spec)
	}
	if len(values) > maxSweepValues {
		return nil, fmt.Errorf("-sweep %q: at most %d values", spec, maxSweepValues)
	}
	var cols []sweepColumn
	for _, v := range values {
		setting := field + "=" + v
		name := tunedName(strings.Join(append(splitNames(tuning), setting), ","))
		if err := checkTuning(name); err != nil {
			return nil, fmt.Errorf("-sweep: %v", err)
		}
		label := setting
		def := pacing.DefaultProbeParams()
		if q := pacing.DefaultProbeParams(); q.Set(field, v) == nil && q == def {
			label += " (default)"
		}
		cols = append(cols, sweepColumn{label: label, controller: name})
	}
	return cols, nil
}

func sweepParam(stdout, stderr io.Writer, scenarios []*Scenario, tuning, spec string, n int, shapes []shape) int {
	if n > maxSeeds {
		fmt.Fprintf(stderr, "simulate: -seeds %d: at most %d\n", n, maxSeeds)
		return exitUsage
	}
	cols, err := sweepColumns(tuning, spec)
	if err != nil {
		fmt.Fprintf(stderr, "simulate: %v\n", err)
		return exitUsage
	}
	for k, sh := range shapes {
		sectionTitle(stdout, k, sh)
		at := atShape(scenarios, sh)
		rows := make([][]seedRow, len(cols))
		for i, c := range cols {
			rows[i] = seedSweep(at, withPeers([]string{c.controller}), n)
		}
		if err := writeSweepTable(stdout, tuning, cols, rows, n); err != nil {
			fmt.Fprintf(stderr, "simulate: %v\n", err)
			return exitError
		}
	}
	return exitOK
}

// writeSweepTable prints a row per scenario, a column per value: the
// default's vs-best mean and (worst seed), then how many scenarios met the
// goal on every seed.
func writeSweepTable(w io.Writer, tuning string, cols []sweepColumn, rows [][]seedRow, n int) error {
	with := ""
	if tuning != "" {
		with = " (with " + tuning + ")"
	}
	fmt.Fprintf(w, "the default controller's vs-best share over seeds 1..%d%s: mean (worst seed)\n\n", n, with)
	tw := newTable(w)
	head := []string{"scenario"}
	for _, c := range cols {
		head = append(head, c.label)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	met := make([]int, len(cols))
	for j := range rows[0] {
		line := []string{rows[0][j].scenario}
		for i := range cols {
			r := rows[i][j]
			line = append(line, fmt.Sprintf("%.3f (%.3f)", r.mean, r.min))
			if r.seeds > 0 && r.met == r.seeds {
				met[i]++
			}
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	foot := []string{"goal met on every seed"}
	for _, m := range met {
		foot = append(foot, fmt.Sprintf("%d of %d", m, len(rows[0])))
	}
	fmt.Fprintln(tw, strings.Join(foot, "\t"))
	return tw.Flush()
}
