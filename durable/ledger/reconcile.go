package ledger

import (
	"sort"
	"time"
)

// Report is what a writer says of itself for reconciliation: its lifetime
// counters and the counter deltas of the facts it has not sent yet.
type Report struct {
	Source   string           `json:"source"`
	Counters map[string]int64 `json:"counters"`
	// Pending sums the counters of the facts not yet sent.
	Pending      map[string]int64 `json:"pending"`
	PendingFacts int              `json:"pending_facts"`
	// LastSentAt is when the last batch left (unix ms); a batch sent
	// recently may still be on its way to D1.
	LastSentAt int64 `json:"last_sent_at"`
	// Appended counts every fact the writer ever appended.
	Appended int64 `json:"appended"`
}

// SettleWindow is how long a sent batch may take to reach D1 before a
// difference counts as a mismatch rather than facts in flight.
const SettleWindow = 2 * time.Minute

// FactsCounter is the D1 total that counts facts (not a writer counter:
// writer counter names cannot start with "_").
const FactsCounter = "_facts"

// Reconciliation statuses.
const (
	StatusOK       = "ok"
	StatusSettling = "settling" // differs, but a batch is in flight
	StatusMismatch = "mismatch"
)

// Result compares one writer with D1.
type Result struct {
	Source string `json:"source"`
	Status string `json:"status"`
	// Diff is, per counter that differs, the writer's counter minus what D1
	// and the unsent facts account for (negative: D1 has more).
	Diff map[string]int64 `json:"diff,omitempty"`
	// Facts in D1, and appended by the writer; pending ones are not in D1 yet.
	FactsInD1    int64 `json:"facts_in_d1"`
	Appended     int64 `json:"appended"`
	PendingFacts int   `json:"pending_facts"`
}

// Reconcile checks counters = (sum of the facts in D1) + (sum of the facts
// not sent yet), counter by counter, and the same for the fact count. Read
// D1 before asking the writer: then a fact can only be missing from both
// sides while in flight, never counted twice.
func Reconcile(r Report, d1 map[string]int64, now time.Time) Result {
	res := Result{Source: r.Source, Status: StatusOK, FactsInD1: d1[FactsCounter], Appended: r.Appended, PendingFacts: r.PendingFacts}
	keys := map[string]bool{}
	for k := range r.Counters {
		keys[k] = true
	}
	for k := range d1 {
		if k != FactsCounter {
			keys[k] = true
		}
	}
	for k := range r.Pending {
		keys[k] = true
	}
	diff := map[string]int64{}
	for k := range keys {
		if d := r.Counters[k] - d1[k] - r.Pending[k]; d != 0 {
			diff[k] = d
		}
	}
	if d := r.Appended - d1[FactsCounter] - int64(r.PendingFacts); d != 0 {
		diff[FactsCounter] = d
	}
	if len(diff) == 0 {
		return res
	}
	res.Diff = diff
	res.Status = StatusMismatch
	// Facts missing from D1 just after a send are facts in flight; facts
	// D1 has beyond the writer's (duplicates), or counters that differ with
	// every fact accounted for, are a real mismatch.
	inFlight := now.UnixMilli()-r.LastSentAt < SettleWindow.Milliseconds()
	if inFlight && diff[FactsCounter] > 0 {
		res.Status = StatusSettling
	}
	return res
}

// SumCounters adds the counters of facts (the pending part of a Report).
func SumCounters(facts []map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, c := range facts {
		for k, v := range c {
			out[k] += v
		}
	}
	return out
}

// SortedKeys lists a counter map's keys in order (stable logs and output).
func SortedKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
