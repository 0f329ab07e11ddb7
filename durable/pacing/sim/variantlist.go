package sim

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The family table shows each family's mean and worst; someone tuning the
// controller also needs the shape of the rest (is the worst alone, or the
// tail of many?). -list prints every variant's figures, from the same runs
// the table folds, and -scenario NAME,NAME narrows -variants to the
// families being tuned so such a run takes seconds, not minutes.

// variantLine is one variant's standing as -list prints it; the JSON keys
// are those of a family's "variant_list" in -variants -list -json.
type variantLine struct {
	Variant string `json:"variant"` // as -scenario takes it, drawn under the report's seed
	standing
	// Failed: the default or every peer failed, so the variant has no
	// figures (the table counts it under errors).
	Failed bool `json:"failed,omitempty"`
}

// listVariants fills each row's List from the runs familyRows folded:
// every variant of the family (not its base, the table's own column),
// worst vs-best first.
func listVariants(rows []familyRow, jobs []variantJob, res []standing) {
	for j, job := range jobs {
		if job.variant < 0 {
			continue
		}
		r := &rows[job.family]
		r.List = append(r.List, variantLine{Variant: job.sc.Name, standing: res[j], Failed: !res[j].ok})
	}
	for f := range rows {
		slices.SortStableFunc(rows[f].List, worstFirst)
	}
}

// worstFirst orders variants by vs-best ascending, ties in draw order (so
// the first is the table's worst variant), failed runs last: they have no
// figure to rank by.
func worstFirst(a, b variantLine) int {
	if a.Failed != b.Failed {
		if a.Failed {
			return 1
		}
		return -1
	}
	return cmp.Compare(a.VsBest, b.VsBest)
}

// writeVariantList prints -list's rows after the family table: grouped by
// family in the table's order, worst first within each.
func writeVariantList(w io.Writer, rep variantReport) error {
	fmt.Fprintf(w, "\nevery variant, worst vs-best first within each family (rerun one with -scenario NAME -seed %d):\n\n", rep.Seed)
	tw := newTable(w)
	fmt.Fprintln(tw, "family\tvariant\treq/item\tvs-best\t÷oracle\trefused%")
	for _, r := range rep.Families {
		for _, v := range r.List {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.Family, v.Variant, v.Shape, lineFigures(v, r.Hold))
		}
	}
	return tw.Flush()
}

// lineFigures is a row's vs-best, ÷oracle and refused% cells: ÷oracle only
// where the family table gives it (hold families), none for a failed run.
func lineFigures(v variantLine, hold bool) string {
	if v.Failed {
		return "failed\t-\t-"
	}
	oracle := "-"
	if hold {
		oracle = fmt.Sprintf("%.3f", v.VsOracle)
	}
	return fmt.Sprintf("%.3f\t%s\t%.2f", v.VsBest, oracle, percent*v.Refused)
}

// notAFamilyError is a -scenario entry -variants cannot draw from: a
// usage error, unlike a scenario file that fails to parse.
type notAFamilyError struct{ msg string }

func (e *notAFamilyError) Error() string { return e.msg }

func notAFamily(format string, args ...any) error {
	return &notAFamilyError{msg: fmt.Sprintf(format, args...)}
}

// loadFamilies resolves -scenario under -variants: "all" (every shipped
// family) or a comma-separated list of shipped names or scenario files, in
// the order given, each once. A variant's name (family#i) is not a family:
// its variants would have names -scenario cannot rerun.
func loadFamilies(arg string) ([]*Scenario, error) {
	names := splitNames(arg)
	if len(names) == 0 {
		return nil, notAFamily("-scenario %q names no family", arg)
	}
	var out []*Scenario
	seen := map[string]bool{}
	for _, name := range names {
		if strings.Contains(name, variantSep) {
			family, _, _ := strings.Cut(name, variantSep)
			return nil, notAFamily("-scenario %q is a variant: -variants draws from a family (%q)", name, family)
		}
		scs, err := loadScenarios(name)
		var unknown *unknownScenarioError
		if errors.As(err, &unknown) {
			return nil, notAFamily("-scenario %q: no shipped scenario family and no scenario file of that name", name)
		}
		if err != nil {
			return nil, err
		}
		for _, sc := range scs {
			if !seen[sc.Name] {
				seen[sc.Name] = true
				out = append(out, sc)
			}
		}
	}
	return out, nil
}
