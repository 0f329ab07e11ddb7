package controller

import (
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
//
// Drift is a property of the catalogue, not of a few apps: some apps'
// pages never parse (a page Apple serves broken), and those are the apps
// that come back again and again (requeued after a parse error, or put
// back by retry-failed). So the breaker weighs unparsed pages by distinct
// app, and an app whose last attempt already ended in a parse error weighs
// SuspectAppWeight: five broken apps retried together are not drift.
const (
	// ParserWindow is how many recent page outcomes the health looks at.
	ParserWindow = 40
	// ParserMinSamples is the fewest outcomes the health judges on.
	ParserMinSamples = 10
	// ParserDriftShare is the share of unparsed pages that is drift.
	ParserDriftShare = 0.5
	// DriftMinApps is the weighted count of distinct apps whose pages did
	// not parse that drift needs, in the window or in one run: an app seen
	// for the first time weighs 1, a suspect one SuspectAppWeight.
	DriftMinApps = 5.0
	// SuspectAppWeight is what an app whose last attempt ended in a parse
	// error (requeued, or retried after it was given up) adds to the drift
	// evidence: its page is more likely broken than the markup changed. Four
	// of them weigh one fresh app, so the 5 apps a retry-failed put back
	// (the incident) weigh 1.25, far from DriftMinApps.
	SuspectAppWeight = 0.25
	// ParserProbeInterval spaces the probe pages sent while paused.
	ParserProbeInterval = 2 * time.Minute
	// ParserProbePages is how many pages one probe fetches.
	ParserProbePages = 1
	// RunUnparsedBreaker: within one run, once the pages that did not
	// parse weigh this much (PageTally) and outnumber those that did, the
	// run fetches no more pages (its other items keep their lookups and
	// stay queued). A large batch cannot spend itself on a markup nobody
	// reads before the controller has seen the drift.
	RunUnparsedBreaker = DriftMinApps
)

// PageSample is one page outcome in the health's window.
type PageSample struct {
	TrackID int64 `json:"id"`
	Parsed  bool  `json:"ok,omitempty"`
	// Suspect: the app's last attempt had ended in a parse error.
	Suspect bool `json:"suspect,omitempty"`
}

// PageTally counts page outcomes and weighs the unparsed ones by distinct
// app (DriftMinApps, SuspectAppWeight). The zero value is empty.
type PageTally struct {
	Parsed, Unparsed int
	apps             map[int64]float64 // unparsed app → its weight
}

// Add counts one page outcome; pages neither parsed nor unparsed say
// nothing about the markup.
func (t *PageTally) Add(id int64, page string, suspect bool) {
	switch page {
	case PageParsed:
		t.Parsed++
	case PageUnparsed:
		t.Unparsed++
		w := 1.0
		if suspect {
			w = SuspectAppWeight
		}
		if t.apps == nil {
			t.apps = map[int64]float64{}
		}
		t.apps[id] = max(t.apps[id], w) // once seen fresh, an app weighs 1
	}
}

// AddResult counts an item's page; a stored page read back from R2 says
// nothing of today's markup.
func (t *PageTally) AddResult(r ItemResult) {
	if !r.PageFromR2 {
		t.Add(r.TrackID, r.Page, r.PriorParseError)
	}
}

// UnparsedApps is the weighted count of distinct apps whose pages did not parse.
func (t PageTally) UnparsedApps() float64 {
	sum := 0.0
	for _, w := range t.apps {
		sum += w
	}
	return sum
}

// RunTripped reports whether a run's page outcomes so far say to stop
// fetching pages for the rest of the run.
func (t PageTally) RunTripped() bool {
	return t.UnparsedApps() >= RunUnparsedBreaker && t.Unparsed > t.Parsed
}

// ParserHealth is the controller's view of whether store pages still parse.
type ParserHealth struct {
	// Window holds the last ParserWindow page outcomes, oldest first. Soft
	// blocks and skipped pages say nothing about the markup and are not
	// recorded.
	Window []PageSample `json:"window,omitempty"`
	// DriftSince is when pages were paused (unix ms); 0 when healthy.
	DriftSince int64 `json:"drift_since,omitempty"`
	// LastProbeAt is when the last probe page was planned (unix ms).
	LastProbeAt int64 `json:"last_probe_at,omitempty"`
	// Probes counts the probe runs planned: the runner rotates its probe
	// through the picked items by it, so no one broken app is probed forever.
	Probes int64 `json:"probes,omitempty"`
	// Parsed and Unparsed count pages over the controller's life.
	Parsed   int64 `json:"parsed"`
	Unparsed int64 `json:"unparsed"`
}

// Drifting reports whether store-page requests are paused.
func (h ParserHealth) Drifting() bool { return h.DriftSince != 0 }

// tally is the window's outcomes.
func (h ParserHealth) tally() PageTally {
	var t PageTally
	for _, p := range h.Window {
		page := PageUnparsed
		if p.Parsed {
			page = PageParsed
		}
		t.Add(p.TrackID, page, p.Suspect)
	}
	return t
}

// UnparsedShare is the share of unparsed pages among the recent outcomes.
func (h ParserHealth) UnparsedShare() (share float64, samples int) {
	samples = len(h.Window)
	if samples == 0 {
		return 0, 0
	}
	return float64(h.tally().Unparsed) / float64(samples), samples
}

// observe records a run's page outcomes and reports a change of state:
// "drift" when pages must pause, "recovered" when a page parsed again.
func (h *ParserHealth) observe(results []ItemResult, now time.Time) string {
	var run PageTally
	for _, r := range results {
		if r.PageFromR2 {
			continue // a stored page: not today's markup
		}
		switch r.Page {
		case PageParsed, PageUnparsed:
			run.AddResult(r)
			h.Window = append(h.Window, PageSample{TrackID: r.TrackID, Parsed: r.Page == PageParsed, Suspect: r.PriorParseError})
		}
	}
	h.Parsed += int64(run.Parsed)
	h.Unparsed += int64(run.Unparsed)
	if n := len(h.Window); n > ParserWindow {
		h.Window = append([]PageSample(nil), h.Window[n-ParserWindow:]...)
	}
	if h.Drifting() {
		if run.Parsed > 0 {
			// A probe parsed: the markup is readable again. Start a fresh
			// window so old failures do not trip the alarm at once.
			h.DriftSince, h.Window = 0, nil
			return "recovered"
		}
		return ""
	}
	// Drift: the window says so, or this run tripped its own breaker (a
	// window still full of yesterday's parsed pages would otherwise let
	// the next runs retry the same unreadable items until they give up).
	// Either way the unparsed pages must come from many distinct apps.
	share, samples := h.UnparsedShare()
	window := samples >= ParserMinSamples && share >= ParserDriftShare && h.tally().UnparsedApps() >= DriftMinApps
	if window || run.RunTripped() {
		h.DriftSince = now.UnixMilli()
		return "drift"
	}
	return ""
}

// resume lifts a pause on the operator's word: pages flow again with a
// fresh window (the old failures would trip it at once). It reports
// whether pages were paused.
func (h *ParserHealth) resume() bool {
	was := h.Drifting()
	h.DriftSince, h.Window = 0, nil
	return was
}

// pagesFor is what a run may do with pages: all of them when healthy;
// while drifting none, but ParserProbePages once every interval.
func (h *ParserHealth) pagesFor(now time.Time, interval time.Duration) (skip bool, probes int) {
	if !h.Drifting() {
		return false, 0
	}
	if now.Sub(time.UnixMilli(h.LastProbeAt)) >= interval {
		h.LastProbeAt = now.UnixMilli()
		h.Probes++
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
	// UnparsedApps is the window's distinct apps whose pages did not
	// parse, weighted (DriftMinApps, SuspectAppWeight).
	UnparsedApps float64 `json:"unparsed_apps"`
	DriftSince   *string `json:"drift_since"`
	Parsed       int64   `json:"parsed"`
	Unparsed     int64   `json:"unparsed"`
}

// Status reports the health for operators.
func (h ParserHealth) Status() ParserStatus {
	share, samples := h.UnparsedShare()
	st := ParserStatus{Status: "green", PagesPaused: h.Drifting(), UnparsedShare: round3(share), Samples: samples,
		UnparsedApps: round3(h.tally().UnparsedApps()), Parsed: h.Parsed, Unparsed: h.Unparsed}
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
