package controller

import (
	"testing"
	"time"

	"storecrawl/durable/pacing"
)

// pageResults is a run's items, each with the given page outcome.
func pageResults(pages ...string) ([]ItemResult, []RequestOutcome) {
	res := make([]ItemResult, len(pages))
	var reqs []RequestOutcome
	for i, p := range pages {
		res[i] = ItemResult{TrackID: int64(i + 1), Class: ClassOK, Page: p}
		if p == PageUnparsed {
			res[i].Class = ClassParseError
		}
		reqs = append(reqs, RequestOutcome{Item: i, Class: ClassOK, Remaining: -1})
		if p != PageSkipped {
			reqs = append(reqs, RequestOutcome{Item: i, Class: ClassOK, Remaining: -1})
		}
	}
	return res, reqs
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestParserDriftPausesPagesProbesAndRecovers(t *testing.T) {
	st := ""
	now := t0
	run := func(pages ...string) Decision {
		t.Helper()
		d := decide(t, &st, "tick", TickRequest{}, now)
		if d.Run == nil {
			t.Fatalf("no run planned at %s", now)
		}
		plan := *d.Run
		res, reqs := pageResults(pages...)
		now = now.Add(time.Second)
		d = decide(t, &st, "tick_done", RunOutcome{Picked: len(res), Results: res, Requests: reqs}, now)
		d.Run = &plan
		now = now.Add(30 * time.Second)
		return d
	}

	// Healthy pages, then a markup no parser knows.
	d := run(repeat(PageParsed, 8)...)
	if d.Run.SkipPages || status(t, st, now, DefaultConfig()).ParserHealth.Status != "unknown" {
		t.Fatalf("8 pages are too few to judge: %+v", status(t, st, now, DefaultConfig()).ParserHealth)
	}
	run(repeat(PageUnparsed, 4)...)
	if h := status(t, st, now, DefaultConfig()).ParserHealth; h.Status != "green" || h.PagesPaused {
		t.Fatalf("4 of 12 unparsed is not drift: %+v", h)
	}
	d = run(repeat(PageUnparsed, 6)...) // 10 of 18 unparsed
	drift := 0
	for _, ev := range d.Events {
		if ev["event"] == "enrichment.parser_drift" {
			drift++
		}
	}
	h := status(t, st, now, DefaultConfig()).ParserHealth
	if drift != 1 || h.Status != "red" || !h.PagesPaused || h.DriftSince == nil || h.Unparsed != 10 || h.Parsed != 8 {
		t.Fatalf("drift not raised once: %d events, %+v", drift, h)
	}

	// Pages paused: the next run plans a probe, later runs lookups only.
	d = run(PageUnparsed, PageSkipped, PageSkipped)
	if !d.Run.SkipPages || d.Run.PageProbes != ParserProbePages {
		t.Fatalf("first paused run must probe: %+v", d.Run)
	}
	d = run(PageSkipped, PageSkipped)
	if !d.Run.SkipPages || d.Run.PageProbes != 0 {
		t.Fatalf("no probe before %s: %+v", ParserProbeInterval, d.Run)
	}
	for _, ev := range d.Events {
		if ev["event"] == "enrichment.parser_drift" {
			t.Fatal("drift must be logged once, not every tick")
		}
	}
	s, _ := LoadState(st, now)
	if s.Totals.Completed != 8 {
		t.Fatalf("skipped pages are not completions: %+v", s.Totals)
	}

	// After the interval a probe parses: pages resume.
	now = now.Add(ParserProbeInterval)
	d = run(PageParsed, PageSkipped)
	if !d.Run.SkipPages || d.Run.PageProbes != 1 {
		t.Fatalf("probe expected: %+v", d.Run)
	}
	recovered := false
	for _, ev := range d.Events {
		recovered = recovered || ev["event"] == "enrichment.parser_recovered"
	}
	if h := status(t, st, now, DefaultConfig()).ParserHealth; !recovered || h.PagesPaused || h.Status != "unknown" {
		t.Fatalf("not recovered: %v %+v", recovered, h)
	}
	if d = run(PageParsed); d.Run.SkipPages {
		t.Fatalf("pages must flow again: %+v", d.Run)
	}
}

// While pages are paused, a run that found no item waiting for its lookup
// does not put the loop to sleep for the idle interval: it wakes for the
// next probe, which may take any queued item.
func TestPausedPagesWakeForTheNextProbe(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ParserProbe = 8 * time.Second
	st := ""
	now := t0
	tick := func(res []ItemResult, reqs []RequestOutcome) Decision {
		t.Helper()
		if d := decideWith(t, cfg, &st, "tick", TickRequest{}, now); d.Run == nil {
			t.Fatalf("no run planned at %s", now)
		}
		now = now.Add(time.Second)
		return decideWith(t, cfg, &st, "tick_done", RunOutcome{Picked: len(res), Results: res, Requests: reqs}, now)
	}
	tick(pageResults(repeat(PageUnparsed, RunUnparsedBreaker+1)...)) // drift
	probeAt := now
	tick(pageResults(PageUnparsed, PageSkipped)) // the first paused run probes
	d := tick(nil, nil)                          // nothing left to look up
	// By the next probe, or the pacing's own next tick if that is later.
	if want := maxTime(probeAt.Add(cfg.ParserProbe), now.Add(pacing.TickInterval)); d.AlarmAt <= 0 || d.AlarmAt > want.UnixMilli() {
		t.Fatalf("paused pages, empty pick: next wake at %s, want by %s", time.UnixMilli(d.AlarmAt), want)
	}
	// Healthy pages and an empty queue: poll slowly.
	st, now = "", t0
	d = tick(nil, nil)
	if d.AlarmAt < now.Add(IdleInterval).UnixMilli() {
		t.Fatalf("empty queue: next wake in %s, want %s", time.UnixMilli(d.AlarmAt).Sub(now), IdleInterval)
	}
}

func TestSkippedPagesStayQueuedUncounted(t *testing.T) {
	for _, c := range []Class{ClassOK, ClassParseError, ClassRateLimit} {
		if got := ActionFor(ItemResult{Class: c, Page: PageSkipped}, MaxItemAttempts-1); got != ActionKeep {
			t.Errorf("%s with page skipped: %s, want keep", c, got)
		}
	}
	if got := ActionFor(ItemResult{Class: ClassServerError, Page: PageSkipped}, MaxItemAttempts-1); got != ActionDefer {
		t.Errorf("a 5xx lookup with page skipped: %s, want defer", got)
	}
	if got := ActionFor(ItemResult{Class: ClassParseError, Page: PageUnparsed, Probe: true}, MaxItemAttempts-1); got != ActionKeep {
		t.Errorf("an unparsed probe page must not use up the item: %s", got)
	}
	if got := ActionFor(ItemResult{Class: ClassOK, Page: PageParsed, Probe: true}, 0); got != ActionStore {
		t.Errorf("a parsed probe is stored: %s", got)
	}
	if got := ActionFor(ItemResult{Class: ClassNotFound, Page: PageSkipped}, 0); got != ActionMissing {
		t.Errorf("an unknown app is done even without its page: %s", got)
	}
}

func TestOneTrippedRunIsDrift(t *testing.T) {
	var h ParserHealth
	ok, _ := pageResults(repeat(PageParsed, 40)...)
	h.observe(ok, t0)
	// A window full of parsed pages, then one run whose pages nobody reads:
	// the run's own breaker says drift at once.
	bad, _ := pageResults(append(repeat(PageUnparsed, RunUnparsedBreaker), PageParsed)...)
	if got := h.observe(bad, t0.Add(time.Minute)); got != "drift" || !h.Drifting() {
		t.Fatalf("observe = %q, health %+v", got, h.Status())
	}
	// A run with a few unreadable pages among many good ones is not.
	var h2 ParserHealth
	mixed, _ := pageResults(append(repeat(PageUnparsed, RunUnparsedBreaker), repeat(PageParsed, 10)...)...)
	if got := h2.observe(mixed, t0); got != "" {
		t.Fatalf("mixed run: %q", got)
	}
}

func TestStartLiftsAnyHold(t *testing.T) {
	for _, name := range []string{"probe", "seed"} {
		cfg, _ := NewConfig(name, 0)
		st := ""
		d := decideWith(t, cfg, &st, "tick", TickRequest{}, t0)
		n := d.Run.BatchSize
		res := make([]ItemResult, n)
		var reqs []RequestOutcome
		for i := range res {
			res[i] = ItemResult{TrackID: int64(i), Class: ClassRateLimit, RetryAfterS: 300}
			reqs = append(reqs, RequestOutcome{Item: i, Class: ClassRateLimit, RetryAfterMs: 3_600_000, Remaining: -1,
				SentAt: t0.UnixMilli(), DoneAt: t0.UnixMilli() + 100})
		}
		later := t0.Add(2 * time.Second)
		decideWith(t, cfg, &st, "tick_done", RunOutcome{Picked: n, Results: res, Requests: reqs}, later)
		s, _ := LoadState(st, later)
		if got := s.Status(later, cfg); name == "probe" && !got.InCooldown {
			t.Fatalf("%s: an hour's Retry-After must hold: %+v", name, got)
		}
		decideWith(t, cfg, &st, "http", Request{Method: "POST", Path: "/start"}, later)
		s, _ = LoadState(st, later)
		if got := s.Status(later, cfg); got.InCooldown {
			t.Fatalf("%s: /start must lift the hold: %+v", name, got)
		}
	}
}

// The incident: retry-failed put back 5 apps given up on pages that never
// parse, and their priority put them first. Their 5 unparsed pages are not
// drift, however often they come back; pages of many fresh apps are.
func TestRetriedBrokenAppsAreNotDrift(t *testing.T) {
	var h ParserHealth
	ok, _ := pageResults(repeat(PageParsed, 10)...)
	h.observe(ok, t0)
	for round := range MaxItemAttempts {
		res, _ := pageResults(repeat(PageUnparsed, 5)...)
		for i := range res {
			res[i].PriorParseError = true
		}
		if got := h.observe(res, t0.Add(time.Duration(round+1)*time.Minute)); got != "" || h.Drifting() {
			t.Fatalf("round %d: 5 retried broken apps said %q: %+v", round, got, h.Status())
		}
	}
	if st := h.Status(); st.UnparsedApps != 5*SuspectAppWeight || st.Status != "green" {
		t.Fatalf("status %+v", st)
	}
	// A window of pages with one app's page failing is not drift either.
	var one ParserHealth
	bad := make([]ItemResult, ParserWindow)
	for i := range bad {
		bad[i] = ItemResult{TrackID: 97, Class: ClassParseError, Page: PageUnparsed}
	}
	if got := one.observe(bad, t0); got != "" {
		t.Fatalf("one app's page: %q", got)
	}
	// Fresh apps' pages that do not parse: drift at once.
	fresh, _ := pageResults(repeat(PageUnparsed, int(DriftMinApps))...)
	if got := h.observe(fresh, t0.Add(time.Hour)); got != "drift" {
		t.Fatalf("%d fresh apps unparsed: %q %+v", int(DriftMinApps), got, h.Status())
	}
}

func TestRetriedAppsUnparsedProbeCountsTowardGiveUp(t *testing.T) {
	r := ItemResult{Class: ClassParseError, Page: PageUnparsed, Probe: true, PriorParseError: true}
	if got := ActionFor(r, MaxItemAttempts-1); got != ActionGiveUp {
		t.Fatalf("a broken app's last probe: %s, want give_up", got)
	}
	if got := ActionFor(r, 0); got != ActionRequeue {
		t.Fatalf("a broken app's probe: %s, want requeue", got)
	}
}

// Start (and resume-pages) lift a parser-drift pause on the operator's
// word; reset is not the way out, and the totals stay.
func TestOperatorResumesPausedPages(t *testing.T) {
	for _, path := range []string{"/start", "/resume-pages"} {
		st := ""
		now := t0
		if d := decide(t, &st, "tick", TickRequest{}, now); d.Run == nil {
			t.Fatal("no run")
		}
		res, reqs := pageResults(repeat(PageUnparsed, int(DriftMinApps)+1)...)
		now = now.Add(time.Second)
		decide(t, &st, "tick_done", RunOutcome{Picked: len(res), Results: res, Requests: reqs}, now)
		if h := status(t, st, now, DefaultConfig()).ParserHealth; !h.PagesPaused {
			t.Fatalf("not paused: %+v", h)
		}
		d := decide(t, &st, "http", Request{Method: "POST", Path: path}, now)
		resumed := false
		for _, ev := range d.Events {
			resumed = resumed || ev["event"] == "enrichment.parser_resumed"
		}
		s, _ := LoadState(st, now)
		if h := s.Status(now, DefaultConfig()); !resumed || h.ParserHealth.PagesPaused || h.Totals.ItemErrors != int64(len(res)) || d.Response.Status != 200 {
			t.Fatalf("%s: resumed %v, %+v", path, resumed, h)
		}
		now = now.Add(2 * time.Second)
		if d := decide(t, &st, "tick", TickRequest{}, now); d.Run == nil || d.Run.SkipPages {
			t.Fatalf("%s: pages must flow: %+v", path, d.Run)
		}
	}
}
