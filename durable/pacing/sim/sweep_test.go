package sim

import (
	"slices"
	"strings"
	"testing"
)

// TestCLIParamsTuneTheDefault: -params reaches the probe (a different
// figure from the default's), names the run, and runs no untuned default
// beside it.
func TestCLIParamsTuneTheDefault(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"-scenario", "retry-after", "-shape", "1"}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	plain := run("-controller", "default", "-json")
	tuned := run("-controller", "default", "-params", "PenaltyHolds=3", "-json")
	if plain == tuned {
		t.Fatal("-params PenaltyHolds=3 changed nothing")
	}
	if !strings.Contains(tuned, `"controller": "default:PenaltyHolds=3"`) {
		t.Errorf("the tuned run is not named for its tuning:\n%s", tuned[:min(len(tuned), 400)])
	}
	if got := withPeers([]string{tunedName("PenaltyHolds=3")}); slices.Contains(got, defaultAlias) {
		t.Errorf("withPeers added the untuned default beside a tuned one: %v", got)
	}
}

func TestCLIParamsRefusesWhatItCannotRead(t *testing.T) {
	for _, args := range [][]string{
		{"-params", "NoSuch=1"},
		{"-params", "PenaltyHolds"},
		{"-sweep", "PenaltyWaitMin=30"},
		{"-sweep", "PenaltyHolds="},
		{"-sweep", "PenaltyHolds=1,2", "-variants", "2"},
	} {
		code, out, errs := runCLI(t, append([]string{"-scenario", "retry-after"}, args...)...)
		if code != exitUsage || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and a reason", args, code, out, errs, exitUsage)
		}
	}
}

// TestCLISweepPrintsAColumnPerValue: one row per scenario, one column per
// value with the default's marked, and each column the figures -seeds
// prints for that tuning.
func TestCLISweepPrintsAColumnPerValue(t *testing.T) {
	code, out, errs := runCLI(t, "-scenario", "retry-after", "-shape", "1", "-seeds", "2", "-sweep", "PenaltyHolds=2,3")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "PenaltyHolds=2 (default)") || !strings.Contains(out, "PenaltyHolds=3") {
		t.Fatalf("no column per value:\n%s", out)
	}
	seedsCell := func(tuning string) string {
		t.Helper()
		code, out, errs := runCLI(t, "-scenario", "retry-after", "-shape", "1", "-seeds", "2", "-params", tuning)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[0] == "retry-after" {
				return f[3] + " (" + f[4] + ")"
			}
		}
		t.Fatalf("no retry-after row:\n%s", out)
		return ""
	}
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "retry-after ") {
			row = strings.Fields(line)
		}
	}
	if len(row) != 5 {
		t.Fatalf("retry-after row %q: want two columns of mean (worst)", row)
	}
	if got, want := row[1]+" "+row[2], seedsCell("PenaltyHolds=2"); got != want {
		t.Errorf("PenaltyHolds=2 column %q, -seeds says %q", got, want)
	}
	if got, want := row[3]+" "+row[4], seedsCell("PenaltyHolds=3"); got != want {
		t.Errorf("PenaltyHolds=3 column %q, -seeds says %q", got, want)
	}
	if row[1] == row[3] {
		t.Errorf("PenaltyHolds 2 and 3 print the same mean %s: the sweep did not tune", row[1])
	}
}
