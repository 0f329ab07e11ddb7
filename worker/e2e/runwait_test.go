//go:build integration

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSchedulerRunWaitAnswersWithResult: POST /v1/scheduler/run with
// "wait": true runs the task in the SchedulerDO and answers with its result
// and cost, recorded like an alarm-driven run; bad input is refused naming
// the field, and without wait the call only makes the task due.
func TestSchedulerRunWaitAnswersWithResult(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "100", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 20)
	w := startWorker(t, dir, persist, s.base)
	ctl := w.base + "/v1/scheduler/run"

	var bad map[string]any
	if code := doJSON(t, "POST", ctl, adminToken, `{"task":"rating-sweep","wait":"yes"}`, &bad); code != 400 || bad["field"] != "wait" {
		t.Fatalf("wait not a boolean: %d %v", code, bad)
	}
	if code := doJSON(t, "POST", ctl, adminToken, `{"task":"nope","wait":true}`, &bad); code != 400 || bad["field"] != "task" {
		t.Fatalf("unknown task: %d %v", code, bad)
	}
	// The first wake runs every task; wait for rating-sweep's to finish, so
	// the waited run is not refused as already running.
	eventually(t, 60*time.Second, "first sweep", func() (bool, string) {
		st := schedStatus(t, w)
		return st["rating-sweep"].Runs >= 1, jsonString(st["rating-sweep"])
	})
	before := schedStatus(t, w)["rating-sweep"].Runs

	var res struct {
		Task          string `json:"task"`
		OK            bool   `json:"ok"`
		Summary       string `json:"summary"`
		Error         string `json:"error"`
		DurationMs    *int64 `json:"duration_ms"`
		D1RowsRead    *int64 `json:"d1_rows_read"`
		D1RowsWritten *int64 `json:"d1_rows_written"`
	}
	start := time.Now()
	code := doJSON(t, "POST", ctl, adminToken, `{"task":"rating-sweep","wait":true}`, &res)
	took := time.Since(start)
	if code != 200 || res.Task != "rating-sweep" || !res.OK || res.Error != "" || !strings.Contains(res.Summary, "apps from cursor") {
		t.Fatalf("run with wait: %d %+v (%s)", code, res, jsonString(res))
	}
	if res.D1RowsRead == nil || *res.D1RowsRead <= 0 || res.D1RowsWritten == nil || res.DurationMs == nil || *res.DurationMs <= 0 ||
		time.Duration(*res.DurationMs)*time.Millisecond > took {
		t.Fatalf("run with wait must report its rows and duration (call took %s): %s", took, jsonString(res))
	}
	t.Logf("rating-sweep: %s in %s", jsonString(res), took)
	// Recorded through the same Finish as an alarm-driven run.
	after := schedStatus(t, w)["rating-sweep"]
	if after.Runs != before+1 || after.LastSummary != res.Summary {
		t.Fatalf("the waited run is not recorded: runs %d → %d, %+v", before, after.Runs, after)
	}

	// Without wait nothing changes: the status, the run later by the alarm.
	var status struct {
		Tasks []schedTask `json:"tasks"`
	}
	if code := doJSON(t, "POST", ctl, adminToken, `{"task":"rating-sweep","wait":false}`, &status); code != 200 || len(status.Tasks) == 0 {
		t.Fatalf("run without wait: %d %s", code, jsonString(status))
	}
	eventually(t, 30*time.Second, "the alarm runs the task", func() (bool, string) {
		st := schedStatus(t, w)["rating-sweep"]
		return st.Runs >= before+2, jsonString(st)
	})
}
