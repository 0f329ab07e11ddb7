//go:build integration

package e2e

import (
	"fmt"
	"path/filepath"
	"storecrawl/worker/ratelimit"
	"strings"
	"testing"
	"time"
)

type ledgerView struct {
	Writers []struct {
		Source       string           `json:"source"`
		Status       string           `json:"status"`
		Diff         map[string]int64 `json:"diff"`
		FactsInD1    int64            `json:"facts_in_d1"`
		Appended     int64            `json:"appended"`
		PendingFacts int              `json:"pending_facts"`
	} `json:"writers"`
	Consumer map[string]int64 `json:"consumer"`
}

// d1Rows runs one read against the local D1 and returns its rows (read
// from its SQLite file: a wrangler d1 execute costs a runtime's start-up,
// ~1.5 s of CPU, per read).
func d1Rows(t *testing.T, persist, sql string) []map[string]any {
	t.Helper()
	rows, err := queryRows(persist, sql)
	if err != nil {
		t.Fatalf("local D1: %v", err)
	}
	return rows
}

// TestLedgerReplicatesExactlyOnce runs the stack with the facts consumer
// failing its first batch after writing it: the batch is redelivered, D1
// ignores what it already has, and every writer's facts arrive exactly once
// (counters = facts in D1 + facts not yet sent, for every writer). It also
// checks the history and counts endpoints the dashboard reads.
func TestLedgerReplicatesExactlyOnce(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "300", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 60)
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t, vars: []string{"LEDGER_FAULT_FAIL_AFTER_WRITE:1", "LIMITER_TALLY_S:" + itoa(testTallyS), "LEDGER_CONFIRM_AFTER_S:" + itoa(testConfirmS)}}
	w.start(t, "wrangler-1.log")

	getStatus(t, w) // starts the controller, which enriches the 60 seeded apps through the limiter
	doJSON(t, "POST", w.base+"/v1/scheduler/run-now", adminToken, `{"task":"charts-refresh"}`, nil)

	var v ledgerView
	eventually(t, 150*time.Second, "every writer's facts in D1, reconciled, after an injected consumer failure", func() (bool, string) {
		v = ledgerView{}
		if code := doJSON(t, "GET", w.base+"/v1/ledger", "", nil, &v); code != 200 {
			return false, fmt.Sprint("HTTP ", code)
		}
		ok := v.Consumer["faults_injected"] == 1 && v.Consumer["duplicates"] > 0 && len(v.Writers) >= 3
		for _, wr := range v.Writers {
			// The limiter's first tally closes within testTallyS of traffic;
			// a configured limiter nothing used here (upstream-reviews,
			// llm-tokens) has no facts, and must show none pending.
			used := wr.Source != "limiter:"+ratelimit.Reviews && wr.Source != "limiter:"+ratelimit.LLMTokens
			ok = ok && wr.Status == "ok" && (wr.FactsInD1 > 0 || !used) && wr.PendingFacts == 0
		}
		return ok, jsonString(v)
	})

	// Exactly once: D1 holds each writer's appended facts, no more, no less,
	// and the counter sums the trigger keeps match the facts themselves.
	for _, wr := range v.Writers {
		rows := d1Rows(t, persist, fmt.Sprintf("SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS ids FROM facts WHERE source = '%s'", wr.Source))
		if n := int64(rows[0]["n"].(float64)); n != wr.Appended || rows[0]["ids"].(float64) != rows[0]["n"].(float64) {
			t.Errorf("%s: %v facts in D1, writer appended %d", wr.Source, rows[0], wr.Appended)
		}
		sums := d1Rows(t, persist, fmt.Sprintf(`SELECT j.key AS k, SUM(j.value) AS v FROM facts f, json_each(f.counters) j WHERE f.source = '%s' GROUP BY j.key`, wr.Source))
		totals := d1Rows(t, persist, fmt.Sprintf(`SELECT counter AS k, total AS v FROM fact_totals WHERE source = '%s' AND counter != '_facts'`, wr.Source))
		if jsonString(sums) != jsonString(totals) {
			t.Errorf("%s: fact sums %v, trigger totals %v", wr.Source, sums, totals)
		}
	}
	if !strings.Contains(w.log.String(), "ledger.facts_stored") || strings.Contains(w.log.String(), `"ledger.mismatch"`) {
		t.Errorf("log: want facts stored and no mismatch")
	}

	// The scheduler's own reconciliation task reads every writer, itself
	// included (a call into the object from its own alarm).
	doJSON(t, "POST", w.base+"/v1/scheduler/run-now", adminToken, `{"task":"ledger-reconcile"}`, nil)
	eventually(t, 30*time.Second, "ledger-reconcile ran", func() (bool, string) {
		st := schedStatus(t, w)["ledger-reconcile"]
		return st.Runs > 0, jsonString(st)
	})
	if st := schedStatus(t, w)["ledger-reconcile"]; st.ConsecutiveFailures != 0 || !strings.Contains(st.LastSummary, fmt.Sprintf("%d writers", 2+len(ratelimit.Limits))) || !strings.Contains(st.LastSummary, "0 mismatch, 0 error") {
		t.Errorf("ledger-reconcile: %+v", st)
	}

	// History: the controller's ticks bucketed per minute, the limiter summed.
	var h struct {
		Points []struct {
			T           int64    `json:"t"`
			Completed   int64    `json:"completed"`
			SuccessRate *float64 `json:"success_rate"`
		} `json:"points"`
		Limiters []struct {
			Key     string `json:"key"`
			Allowed int64  `json:"allowed"`
		} `json:"limiters"`
		ProjectedPerDay float64 `json:"projected_per_day"`
	}
	// The controller's ticks reach the ledger a minute at a time (the
	// minute's fact closes with its last tick), so its history follows
	// within about a minute of the first ticks.
	eventually(t, 90*time.Second, "the controller's ticks in the history", func() (bool, string) {
		h.Points, h.Limiters = nil, nil
		if code := doJSON(t, "GET", w.base+"/v1/history?target=main", "", nil, &h); code != 200 {
			return false, fmt.Sprint("HTTP ", code)
		}
		var completed int64
		for _, p := range h.Points {
			completed += p.Completed
		}
		return len(h.Points) > 0 && completed > 0 && len(h.Limiters) > 0 && h.Limiters[0].Allowed > 0 && h.ProjectedPerDay > 0, jsonString(h)
	})
	for _, bad := range []struct{ query, field string }{
		{"target=nope", "target"}, {"since=yesterday", "since"}, {"since=" + fmt.Sprint(time.Now().Add(time.Hour).UnixMilli()), "since"},
		{"since=2020-01-01T00:00:00Z", "since"}, {"bucket_s=5", "bucket_s"}, {"bucket_s=x", "bucket_s"},
	} {
		var e map[string]any
		if code := doJSON(t, "GET", w.base+"/v1/history?"+bad.query, "", nil, &e); code != 400 || e["field"] != bad.field {
			t.Errorf("history?%s: %d %v, want 400 naming %s", bad.query, code, e, bad.field)
		}
	}

	// Pipeline counts come from trigger-kept counters; they match COUNT(*)
	// (read until the two reads see the same moment: enrichment goes on).
	eventually(t, 60*time.Second, "trigger-kept counts equal COUNT(*)", func() (bool, string) {
		var counts map[string]any
		doJSON(t, "GET", w.base+"/v1/pipeline/counts", "", nil, &counts)
		real := d1Rows(t, persist, `SELECT COUNT(*) AS known, SUM(enriched_at IS NULL) AS pending,
			SUM(enriched_at IS NOT NULL AND enrichment_source = 'itunes+store') AS enriched FROM app_registry`)[0]
		ok := counts["apps_known"] == real["known"] && counts["apps_pending"] == real["pending"] && counts["apps_enriched"] == real["enriched"]
		return ok, fmt.Sprintf("counts %v, COUNT(*) says %v", counts, real)
	})
}

// TestDeadLetteredFactsAreReplayed fails the facts consumer before it
// writes, as a D1 outage would: the batches are retried
// into the dead-letter queue, which keeps their whole bodies. Once D1 is
// back, POST /v1/system/dead-letters/replay sends them again, and every
// writer's facts are in D1 exactly once, as if nothing had happened.
func TestDeadLetteredFactsAreReplayed(t *testing.T) {
	t.Parallel()
	dir := outputDir(t)
	s := startSim(t, dir, "-apps", "300", "-rate-per-min", "6000", "-burst", "100")
	persist := filepath.Join(dir, "state")
	prepareDB(t, persist, dir, 40)
	w := &worker{persist: persist, simBase: s.base, dir: dir, owner: t, vars: []string{"TEST_ROUTES:1"}}
	w.start(t, "wrangler-1.log")

	if code := doJSON(t, "POST", w.base+"/__test/faults", adminToken, `{"facts_fail_before_write": true}`, nil); code != 200 {
		t.Fatalf("faults: %d", code)
	}
	getStatus(t, w) // the controller enriches the seeded apps; its tick facts go out
	type deadLetter struct {
		MessageID string `json:"message_id"`
		EventType string `json:"event_type"`
		BodyKept  int    `json:"body_kept"`
		BodyBytes int    `json:"body_bytes"`
	}
	var dead []deadLetter
	eventually(t, 150*time.Second, "facts batches dead-lettered with their whole bodies", func() (bool, string) {
		var page struct {
			Items []deadLetter `json:"items"`
		}
		doJSON(t, "GET", w.base+"/v1/system/dead-letters?limit=100", "", nil, &page)
		dead = nil
		for _, d := range page.Items {
			if d.EventType == "facts" && d.BodyKept == 1 && d.BodyBytes > 0 {
				dead = append(dead, d)
			}
		}
		return len(dead) >= 2, jsonString(page)
	})
	if code := doJSON(t, "POST", w.base+"/__test/faults", adminToken, `{"facts_fail_before_write": false}`, nil); code != 200 {
		t.Fatalf("faults off: %d", code)
	}
	var out map[string]any
	if code := doJSON(t, "POST", w.base+"/v1/system/dead-letters/replay", "", `{}`, &out); code != 401 {
		t.Fatalf("an anonymous replay: %d", code)
	}
	// Replay until nothing is left: a batch whose last delivery failed just
	// before the fault was lifted reaches the dead-letter queue a little later.
	replayed := 0
	replayAll := func() {
		for more := true; more; {
			var res struct {
				Replayed []string `json:"replayed"`
				Skipped  []any    `json:"skipped"`
				More     bool     `json:"more"`
			}
			if code := doJSON(t, "POST", w.base+"/v1/system/dead-letters/replay", adminToken, `{}`, &res); code != 200 || len(res.Skipped) != 0 {
				t.Fatalf("replay: %d %s", code, jsonString(res))
			}
			replayed += len(res.Replayed)
			more = res.More
		}
	}
	replayAll()
	if replayed < len(dead) {
		t.Fatalf("replayed %d of %d dead facts batches", replayed, len(dead))
	}

	var v ledgerView
	eventually(t, 180*time.Second, "every writer's facts in D1 after the replay", func() (bool, string) {
		replayAll()
		v = ledgerView{}
		if code := doJSON(t, "GET", w.base+"/v1/ledger", "", nil, &v); code != 200 {
			return false, fmt.Sprint("HTTP ", code)
		}
		ok := len(v.Writers) >= 2
		for _, wr := range v.Writers {
			ok = ok && wr.Status == "ok" && wr.PendingFacts == 0
		}
		return ok, jsonString(v)
	})
	for _, wr := range v.Writers {
		rows := d1Rows(t, persist, fmt.Sprintf("SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS ids FROM facts WHERE source = '%s'", wr.Source))
		if n := int64(rows[0]["n"].(float64)); n != wr.Appended || rows[0]["ids"].(float64) != rows[0]["n"].(float64) {
			t.Errorf("%s: %v facts in D1, writer appended %d", wr.Source, rows[0], wr.Appended)
		}
	}
	t.Logf("%d facts batches dead-lettered and replayed", replayed)
}
