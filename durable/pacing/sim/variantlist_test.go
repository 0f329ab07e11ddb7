package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// listFamilies are two small families for -list: one where a refusal
// costs a hold (÷oracle shown) and one where it does not ("-").
var listFamilies = []string{"retry-after", "steady-20"}

const listVariantsN = 3

// listArgs is -variants listVariantsN over listFamilies, plus extra.
func listArgs(extra ...string) []string {
	return append([]string{"-scenario", strings.Join(listFamilies, ","),
		"-variants", strconv.Itoa(listVariantsN), "-seed", "1"}, extra...)
}

// -list prints every variant once, grouped by family in the table's
// order, worst first, and its worst row is the table's worst variant.
func TestCLIVariantsList(t *testing.T) {
	code, out, errs := runCLI(t, listArgs("-list")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	worst := map[string][2]string{} // family → worst variant, worst figure
	var list [][]string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 12 && strings.HasPrefix(f[5], f[0]+variantSep):
			worst[f[0]] = [2]string{f[5], f[4]}
		case len(f) == 6 && strings.HasPrefix(f[1], f[0]+variantSep):
			list = append(list, f)
		}
	}
	if len(list) != len(listFamilies)*listVariantsN {
		t.Fatalf("%d list rows, want %d:\n%s", len(list), len(listFamilies)*listVariantsN, out)
	}
	for k, family := range listFamilies {
		rows := list[k*listVariantsN : (k+1)*listVariantsN]
		var names, want []string
		var figures []float64
		for i, r := range rows {
			want = append(want, variantName(family, i))
			names = append(names, r[1])
			v, err := strconv.ParseFloat(r[3], 64)
			if err != nil || r[0] != family {
				t.Fatalf("row %q: family %s, %v", r, family, err)
			}
			figures = append(figures, v)
			if (r[4] == "-") != (family == "steady-20") {
				t.Errorf("÷oracle %q on %s (only hold families have one)", r[4], family)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, want) || !slices.IsSorted(figures) {
			t.Errorf("%s rows %q: names %v, want %v; vs-best not ascending?", family, rows, names, want)
		}
		if w := worst[family]; rows[0][1] != w[0] || rows[0][3] != w[1] {
			t.Errorf("%s worst row %q, the table's worst %v", family, rows[0], w)
		}
	}
}

// -json keeps its keys without -list; with it each family lists its
// variants, the worst first and the same as the family's worst.
func TestCLIVariantsListJSON(t *testing.T) {
	code, out, errs := runCLI(t, listArgs("-json")...)
	var plain struct{ Families []map[string]json.RawMessage }
	if code != exitOK || json.Unmarshal([]byte(out), &plain) != nil || len(plain.Families) != len(listFamilies) {
		t.Fatalf("exit %d %s\n%s", code, errs, out)
	}
	for _, f := range plain.Families {
		if _, ok := f["variant_list"]; ok {
			t.Errorf("variant_list without -list: %s", f["family"])
		}
	}
	code, out, errs = runCLI(t, listArgs("-json", "-list")...)
	var rep variantReport
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Families) != len(listFamilies) {
		t.Fatalf("exit %d %s\n%s", code, errs, out)
	}
	for k, r := range rep.Families {
		if r.Family != listFamilies[k] || len(r.List) != listVariantsN || r.Variants != listVariantsN ||
			r.List[0].Variant != r.WorstVariant || r.List[0].VsBest != r.Worst {
			t.Errorf("family %s: worst %s %.3f, list %+v", r.Family, r.WorstVariant, r.Worst, r.List)
		}
	}
}

func TestCLIVariantsListUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"-list"}, "-list"},
		{[]string{"-scenario", "retry-after", "-variants", "0", "-list"}, "-list"},
		{[]string{"-scenario", "retry-after,no-such", "-variants", "1"}, `"no-such"`},
		{[]string{"-scenario", "retry-after#5", "-variants", "1"}, `"retry-after#5" is a variant`},
		{[]string{"-scenario", ",", "-variants", "1"}, "names no family"},
	} {
		if code, _, errs := runCLI(t, c.args...); code != exitUsage || !strings.Contains(errs, c.says) {
			t.Errorf("%q: exit %d, %q; want %d saying %s", c.args, code, errs, exitUsage, c.says)
		}
	}
}

// listVariants ranks by vs-best, ties in draw order, a failed run last,
// and leaves the base (the table's own column) out.
func TestListVariantsOrder(t *testing.T) {
	sc := testScenario(nil)
	figures := []standing{{VsBest: 1}, {VsBest: 0.5, ok: true}, {VsBest: 0.9, ok: true}, {ok: false}, {VsBest: 0.5, ok: true}}
	var jobs []variantJob
	for i := range figures {
		v := *sc
		v.Name = variantName(sc.Name, i-1)
		jobs = append(jobs, variantJob{variant: i - 1, sc: &v})
	}
	rows := []familyRow{{Family: sc.Name}}
	listVariants(rows, jobs, figures)
	var got []string
	for _, l := range rows[0].List {
		got = append(got, fmt.Sprintf("%s %v", l.Variant, l.Failed))
	}
	want := []string{"test#0 false", "test#3 false", "test#1 false", "test#2 true"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}
