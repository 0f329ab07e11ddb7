package sim

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"storecrawl/durable/pacing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = CLI(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCLIAllTable(t *testing.T) {
	code, out, errs := runCLI(t, "-scenario", "all", "-controller", "seed,no-such", "-shape", "file")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	shipped, _ := loadShipped()
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[1] == "seed" || f[1] == "no-such") {
			rows = append(rows, f[0]+" "+f[1])
			if f[1] == "no-such" && !strings.Contains(line, "error: unknown controller") {
				t.Errorf("unknown controller row: %q", line)
			}
			if f[1] == "seed" && len(f) != 12 {
				t.Errorf("seed row has %d columns: %q", len(f), line)
			}
		}
	}
	var want []string
	for _, sc := range shipped {
		want = append(want, sc.Name+" seed", sc.Name+" no-such")
	}
	if !slices.Equal(rows, want) {
		t.Errorf("rows:\n%v\nwant:\n%v", rows, want)
	}
	if !strings.Contains(out, "summary") || !strings.Contains(out, "capacity_allowed") {
		t.Errorf("no summary or header:\n%s", out)
	}
}

func TestCLISingleJSONKeys(t *testing.T) {
	code, out, errs := runCLI(t, "-scenario", "halved", "-controller", "aimd", "-json", "-trace")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"algorithm", "attempts_per_success", "capacity_allowed", "controller", "cooldowns",
		"goodput_ratio", "item_attempts", "items_completed", "lockouts", "recovery_s", "refused_ratio",
		"requests_ok", "requests_refused", "requests_sent", "retry_after_violations", "scenario",
		"server_errors", "simulated_s", "subrequests_per_item", "ticks", "timeouts", "trace"}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("keys %v\nwant %v", got, want)
	}
	var trace []TraceRow
	if err := json.Unmarshal(m["trace"], &trace); err != nil || len(trace) != 60 {
		t.Errorf("trace: %d minutes, %v", len(trace), err)
	}
	var rec []int
	if err := json.Unmarshal(m["recovery_s"], &rec); err != nil || len(rec) != 1 {
		t.Errorf("recovery_s %s: %v", m["recovery_s"], err)
	}
}

func TestCLISingleText(t *testing.T) {
	code, out, _ := runCLI(t, "-scenario", "steady-20", "-controller", "oracle", "-trace")
	if code != exitOK || !strings.Contains(out, "goodput_ratio") || !strings.Contains(out, "chunk_pause_ms") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestCLIErrors(t *testing.T) {
	if code, _, errs := runCLI(t, "-scenario", "steady-20", "-controller", "no-such"); code != exitError || !strings.Contains(errs, "unknown controller") {
		t.Errorf("unknown controller: exit %d, %q", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"duration_s": 60, "itemz": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "-scenario", bad, "-controller", "seed"); code != exitError || !strings.Contains(errs, `"itemz"`) {
		t.Errorf("bad file: exit %d, %q", code, errs)
	}
	if code, _, _ := runCLI(t, "-controller", " , "); code != exitUsage {
		t.Errorf("no controllers: exit %d", code)
	}
}

func TestCLISeedSweep(t *testing.T) {
	code, out, errs := runCLI(t, "-scenario", "steady-60", "-seeds", "3", "-controller", "default")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "steady-60" {
			row = f
		}
	}
	// scenario, goodput, refused, mean, min, max, worst seed, "N of 3"
	if len(row) != 10 || row[len(row)-1] != "3" || row[len(row)-2] != "of" {
		t.Fatalf("seed row %q in:\n%s", row, out)
	}
	if !strings.Contains(out, "over seeds 1..3") {
		t.Errorf("header missing:\n%s", out)
	}
	if code, _, _ := runCLI(t, "-seeds", "1000"); code != exitUsage {
		t.Errorf("-seeds 1000: exit %d, want %d", code, exitUsage)
	}
}

func TestCLIShapeSections(t *testing.T) {
	code, out, errs := runCLI(t, "-scenario", "steady-60", "-controller", "oracle", "-shape", "file,1,4")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// The file's own shape first, untitled (as before -shape), then each override.
	if strings.HasPrefix(out, "===") || strings.Count(out, "=== at ") != 2 ||
		!strings.Contains(out, "=== at 1 request per item") || !strings.Contains(out, "=== at 4 requests per item") {
		t.Errorf("sections:\n%s", out)
	}
	code, out, errs = runCLI(t, "-scenario", "steady-60", "-controller", "oracle", "-shape", "1,4", "-json")
	var runs []Metrics
	if code != exitOK || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 2 ||
		runs[0].SubrequestsPerItem != 1 || runs[1].SubrequestsPerItem != 4 {
		t.Errorf("json at 1,4: exit %d %s\n%s", code, errs, out)
	}
	if code, _, _ := runCLI(t, "-scenario", "steady-60", "-shape", "0"); code != exitUsage {
		t.Errorf("-shape 0: exit %d", code)
	}
}

// -variants 3 on one family: the text table and goal line, and -json
// identical (but for the wall time) whichever worker ran which variant.
func TestCLIVariantsSmall(t *testing.T) {
	code, out, errs := runCLI(t, "-scenario", "retry-after", "-variants", "3", "-seed", "1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 12 && f[0] == "retry-after" && f[2] != "MET:" {
			row = f
		}
	}
	if row == nil || !strings.HasPrefix(row[5], "retry-after#") || !strings.Contains(out, "goals met on ") ||
		!strings.Contains(out, "wall time ") || !strings.Contains(out, "\nretry-after  ") {
		t.Errorf("no family row, goal line or wall time:\n%s", out)
	}
	var reps [2]variantReport
	for i := range reps {
		code, out, errs := runCLI(t, "-scenario", "retry-after", "-variants", "3", "-seed", "1", "-json")
		if code != exitOK || json.Unmarshal([]byte(out), &reps[i]) != nil {
			t.Fatalf("json: exit %d %s\n%s", code, errs, out)
		}
		reps[i].WallS = 0
	}
	r := reps[0]
	if !reflect.DeepEqual(reps[0], reps[1]) {
		t.Errorf("two runs differ:\n%+v\n%+v", reps[0], reps[1])
	}
	if len(r.Families) != 1 || r.Families[0].Variants != 3 || r.Families[0].AtProduct != 1 || !r.Families[0].Hold ||
		r.Runs != 4*4 || r.Families[0].WorstScenario == nil || len(r.Families[0].Goals) != 6 {
		t.Errorf("report %+v", r)
	}
	if code, _, _ := runCLI(t, "-variants", "100000"); code != exitUsage {
		t.Errorf("-variants 100000: exit %d", code)
	}
}

// TestEveryControllerBuilds: the simulator builds every name it lists, the
// peers the product's registry does not know among them.
func TestEveryControllerBuilds(t *testing.T) {
	sc := &Scenario{SubrequestsPerItem: 2}
	for _, n := range controllerNames() {
		c, err := newController(n, sc)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if want := strings.Replace(n, defaultAlias, pacing.DefaultName, 1); c.Name() != want {
			t.Errorf("%s builds %s", n, c.Name())
		}
	}
}
