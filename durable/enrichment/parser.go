package enrichment

import (
	"strings"
	"time"
)

// What happened to an item's store page, reported in ItemResult.Page.
const (
	PageParsed    = "parsed"     // it held product data
	PageUnparsed  = "unparsed"   // it came back (200) with no recognisable product data
	PageSoftBlock = "soft_block" // a challenge or consent page: a refusal, not a bad page
	PageSkipped   = "skipped"    // not fetched: pages are paused (parser drift)
)

// Parser drift: when many store pages in a row come back with no product
// data, Apple has changed the markup, and fetching more pages only turns
// every queued item into a failure. The controller then stops fetching
// pages (lookups go on), leaves the items queued, and tries one probe page
// now and then until a page parses again (or a parser fix is deployed and
// the stored pages are re-parsed).
const (
	// ParserWindow is how many recent page outcomes the health looks at.
	ParserWindow = 40
	// ParserMinSamples is the fewest outcomes the health judges on.
	ParserMinSamples = 10
	// ParserDriftShare is the share of unparsed pages that is drift.
	ParserDriftShare = 0.5
	// ParserProbeInterval spaces the probe pages sent while paused.
	ParserProbeInterval = 2 * time.Minute
	// ParserProbePages is how many pages one probe fetches.
	ParserProbePages = 1
	// RunUnparsedBreaker: within one run, once this many pages did not
	// parse and none or fewer parsed, the run fetches no more pages (its
	// other items keep their lookups and stay queued). A large batch
	// cannot spend itself on a markup nobody reads before the controller
	// has seen the drift.
	RunUnparsedBreaker = 5
)

// RunPagesTripped reports whether a run's page outcomes so far say to stop
// fetching pages for the rest of the run.
func RunPagesTripped(parsed, unparsed int) bool {
	return unparsed >= RunUnparsedBreaker && unparsed > parsed
}

// ParserHealth is the controller's view of whether store pages still parse.
type ParserHealth struct {
	// Recent holds the last ParserWindow page outcomes, oldest first:
	// '1' parsed, '0' unparsed. Soft blocks and skipped pages say nothing
	// about the markup and are not recorded.
	Recent string `json:"recent"`
	// DriftSince is when pages were paused (unix ms); 0 when healthy.
	DriftSince int64 `json:"drift_since,omitempty"`
	// LastProbeAt is when the last probe page was planned (unix ms).
	LastProbeAt int64 `json:"last_probe_at,omitempty"`
	// Parsed and Unparsed count pages over the controller's life.
	Parsed   int64 `json:"parsed"`
	Unparsed int64 `json:"unparsed"`
}

// Drifting reports whether store-page requests are paused.
func (h ParserHealth) Drifting() bool { return h.DriftSince != 0 }

// UnparsedShare is the share of unparsed pages among the recent outcomes.
func (h ParserHealth) UnparsedShare() (share float64, samples int) {
	samples = len(h.Recent)
	if samples == 0 {
		return 0, 0
	}
	return float64(strings.Count(h.Recent, "0")) / float64(samples), samples
}

// observe records a run's page outcomes and reports a change of state:
// "drift" when pages must pause, "recovered" when a page parsed again.
func (h *ParserHealth) observe(results []ItemResult, now time.Time) string {
	parsedAny := false
	runParsed, runUnparsed := 0, 0
	for _, r := range results {
		switch r.Page {
		case PageParsed:
			h.Recent += "1"
			h.Parsed++
			parsedAny = true
			runParsed++
		case PageUnparsed:
			h.Recent += "0"
			h.Unparsed++
			runUnparsed++
		}
	}
	if n := len(h.Recent); n > ParserWindow {
		h.Recent = h.Recent[n-ParserWindow:]
	}
	if h.Drifting() {
		if parsedAny {
			// A probe parsed: the markup is readable again. Start a fresh
			// window so old failures do not trip the alarm at once.
			h.DriftSince, h.Recent = 0, ""
			return "recovered"
		}
		return ""
	}
	// Drift: the window says so, or this run tripped its own breaker (a
	// window still full of yesterday's parsed pages would otherwise let
	// the next runs retry the same unreadable items until they give up).
	share, samples := h.UnparsedShare()
	if (samples >= ParserMinSamples && share >= ParserDriftShare) || RunPagesTripped(runParsed, runUnparsed) {
		h.DriftSince = now.UnixMilli()
		return "drift"
	}
	return ""
}

// pagesFor is what a run may do with pages: all of them when healthy;
// while drifting none, but ParserProbePages once every interval.
func (h *ParserHealth) pagesFor(now time.Time, interval time.Duration) (skip bool, probes int) {
	if !h.Drifting() {
		return false, 0
	}
	if now.Sub(time.UnixMilli(h.LastProbeAt)) >= interval {
		h.LastProbeAt = now.UnixMilli()
		return true, ParserProbePages
	}
	return true, 0
}

// probeDue is when the next probe page may go out while pages are paused.
func (h ParserHealth) probeDue(interval time.Duration) time.Time {
	return time.UnixMilli(h.LastProbeAt).Add(interval)
}

// ParserStatus is parser_health in GET /v1/enrichment/status.
type ParserStatus struct {
	// Status is "green" (pages parse), "red" (drift: pages paused) or
	// "unknown" (too few pages seen yet).
	Status        string  `json:"status"`
	PagesPaused   bool    `json:"pages_paused"`
	UnparsedShare float64 `json:"unparsed_share"`
	Samples       int     `json:"samples"`
	DriftSince    *string `json:"drift_since"`
	Parsed        int64   `json:"parsed"`
	Unparsed      int64   `json:"unparsed"`
}

// Status reports the health for operators.
func (h ParserHealth) Status() ParserStatus {
	share, samples := h.UnparsedShare()
	st := ParserStatus{Status: "green", PagesPaused: h.Drifting(), UnparsedShare: round3(share), Samples: samples,
		Parsed: h.Parsed, Unparsed: h.Unparsed}
	switch {
	case h.Drifting():
		st.Status = "red"
		t := time.UnixMilli(h.DriftSince).UTC().Format(time.RFC3339)
		st.DriftSince = &t
	case samples < ParserMinSamples:
		st.Status = "unknown"
	}
	return st
}
