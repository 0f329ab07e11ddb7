package controller

import (
	"time"

	"storecrawl/durable/pacing"
	"storecrawl/internal/objects"
)

// Class is the outcome of one upstream request or item (the protocol's
// vocabulary, shared with worker/upstream).
type Class = objects.Class

const (
	ClassOK          = objects.ClassOK
	ClassRateLimit   = objects.ClassRateLimit
	ClassServerError = objects.ClassServerError
	ClassTimeout     = objects.ClassTimeout
	ClassNotFound    = objects.ClassNotFound
	ClassParseError  = objects.ClassParseError
	ClassStoreError  = objects.ClassStoreError
)

// ClassifyStatus maps an upstream HTTP status to a class (objects.ClassifyStatus).
var ClassifyStatus = objects.ClassifyStatus

// MaxItemAttempts bounds how often one item is tried before it is marked
// permanently failed, so no item is retried forever. Only item-level
// failures count (a parse error, a store error that keeps repeating):
// rate limits, 5xx, timeouts and connection errors are the upstream's
// state, not the item's.
const MaxItemAttempts = 3

// Backoff of an item deferred by an upstream-level failure: DeferBase after
// the first, doubling with each deferral in a row, at most DeferMax. Long
// enough that the next ticks pick other rows first; short enough that an
// item is tried again soon after the upstream recovers.
const (
	DeferBase = 30 * time.Second
	DeferMax  = 30 * time.Minute
)

// DeferBackoff is how long an item deferred for the defers-th time in a
// row (1 = first) waits before it may be picked again.
func DeferBackoff(defers int) time.Duration {
	d := DeferBase
	for i := 1; i < defers && d < DeferMax; i++ {
		d *= 2
	}
	return min(d, DeferMax)
}

// ItemAction is what the store does with an item after its attempt.
type ItemAction string

const (
	ActionStore   ItemAction = "store"   // write the enriched record
	ActionRequeue ItemAction = "requeue" // leave it queued, attempt counted
	ActionKeep    ItemAction = "keep"    // leave it queued, attempt not counted
	// ActionDefer: leave it queued, attempt not counted, not picked again
	// before its backoff (an upstream-level failure).
	ActionDefer   ItemAction = "defer"
	ActionGiveUp  ItemAction = "give_up" // mark it permanently failed
	ActionMissing ItemAction = "missing" // the upstream does not know it: mark done as not_found
)

// ActionFor decides an item's fate from its outcome and the attempts it had
// before this one. An item whose lookup batch failed as a whole shares the
// batch's fate, never counted as its own attempt: kept when refused,
// deferred otherwise. An item whose page was skipped or probed (parser
// drift) stays queued, its attempt not counted, unless it is done for good.
func ActionFor(r ItemResult, priorAttempts int) ItemAction {
	if r.BatchFailed {
		if r.Class == ClassRateLimit {
			return ActionKeep
		}
		return ActionDefer
	}
	// A probe's unparsed page says the markup is still unknown, not that
	// the app is bad, unless the app's pages failed to parse before: then
	// it counts toward the app's give-up, so a broken app cannot hold
	// the probes (and the pause) forever.
	probeCounts := r.Probe && r.PriorParseError && r.Class == ClassParseError
	if (r.Page == PageSkipped || (r.Probe && !probeCounts)) && r.Class != ClassNotFound && r.Class != ClassOK {
		if r.Class == ClassServerError || r.Class == ClassTimeout {
			return ActionDefer
		}
		return ActionKeep
	}
	if r.Page == PageSkipped && r.Class == ClassOK {
		return ActionKeep // looked up, page pending
	}
	switch r.Class {
	case ClassOK:
		return ActionStore
	case ClassNotFound:
		return ActionMissing
	case ClassRateLimit:
		// The run stops at a refusal and the pacing holds off: the item is
		// simply next when the upstream lets us in again.
		return ActionKeep
	case ClassServerError, ClassTimeout:
		return ActionDefer
	}
	// Item-level: a parse error, or a store error (one that keeps repeating
	// on the same item is that item's, e.g. a row D1 refuses).
	if priorAttempts+1 >= MaxItemAttempts {
		return ActionGiveUp
	}
	return ActionRequeue
}

// BatchItemClass is what a lookup batch that failed as a whole means for
// each of its items. A refusal, a 5xx and a timeout are the upstream's
// state and keep their class. Any other answer that cannot be used as a
// whole (a 4xx, a body cut short or not the lookup's JSON, a redirect to
// another host) says nothing about any one app: it is a parse error, never
// not_found, which would dequeue every app of the batch as unknown.
func BatchItemClass(c Class) Class {
	switch c {
	case ClassRateLimit, ClassServerError, ClassTimeout:
		return c
	}
	return ClassParseError
}

// ItemResult is the outcome of one item in a run.
type ItemResult struct {
	TrackID     int64 `json:"track_id"`
	Class       Class `json:"class"`
	Status      int   `json:"status,omitempty"`
	RetryAfterS int   `json:"retry_after_s,omitempty"`
	GaveUp      bool  `json:"gave_up,omitempty"`
	// Deferred: an upstream-level failure left the item queued with a backoff.
	Deferred bool   `json:"deferred,omitempty"`
	Error    string `json:"error,omitempty"`
	// Page is what became of the store page (PageParsed, ...); "" when no
	// page was fetched.
	Page string `json:"page,omitempty"`
	// Probe: the item's page was a parser-drift probe; a probe that does
	// not parse says the markup is still unknown, not that the item is bad.
	Probe bool `json:"probe,omitempty"`
	// PriorParseError: the item's last attempt had ended in a parse error
	// (requeued after it, or put back by retry-failed after giving up). Its
	// unparsed page weighs little as drift evidence (SuspectAppWeight) and
	// counts toward its give-up even as a probe.
	PriorParseError bool `json:"prior_parse_error,omitempty"`
	// Discovered counts the apps the item's page named as similar that
	// were unknown: its save queued them (no request of their own).
	Discovered int `json:"discovered,omitempty"`
	// LookupSaved: the lookup was stored as a lookup-only record although
	// the item is not complete (its page is pending).
	LookupSaved bool `json:"lookup_saved,omitempty"`
	// BatchFailed: the lookup batch the item was in failed as a whole
	// (Class is BatchItemClass of its answer); no page was fetched.
	BatchFailed bool `json:"batch_failed,omitempty"`
	// StoredLookup: the item's lookup was its fresh stored fields (from a
	// recent lookup or search), so no lookup was sent for it.
	StoredLookup bool `json:"stored_lookup,omitempty"`
	// Refresh: the item was an enriched app whose refresh came due, not a
	// queued one; it is never requeued, deferred or given up
	// (the catalogue schedules it), and ActionFor does not apply.
	Refresh bool `json:"refresh,omitempty"`
	// Unchanged: the refresh's lookup showed the version and rating count
	// its page was fetched for, so no page was fetched.
	Unchanged bool `json:"unchanged,omitempty"`
	// PageDeferred: the refresh's lookup showed a change, but while new
	// apps waited it got no page slot: its lookup was recorded and its
	// page stays due (on the retry list). Neither Refreshed nor failed.
	PageDeferred bool `json:"page_deferred,omitempty"`
	// PageFromR2: a retry's page was its stored one, read back from R2
	// (ENRICHMENT_PAGE_REUSE_H), and parsed (Page is PageParsed): no page
	// request was sent, and the page says nothing of today's markup.
	PageFromR2 bool `json:"page_from_r2,omitempty"`
}

// RunPlan is the I/O the shim asks the Worker code to perform for one tick:
// BatchSize items in chunks of ChunkItems, ChunkPauseMs between chunks;
// with StopOnThrottle the run ends after a chunk that saw a 403/429 and the
// items not started stay queued untouched.
type RunPlan struct {
	TickAt         int64 `json:"tick_at"`
	BatchSize      int   `json:"batch_size"`
	ChunkItems     int   `json:"chunk_items"`
	ChunkPauseMs   int64 `json:"chunk_pause_ms"`
	StopOnThrottle bool  `json:"stop_on_throttle"`
	// MaxInFlight: at most this many of a chunk's items run at once (the
	// store host's pacing.Plan.MaxInFlight; 0 = all, the runtime's six
	// connections bounding them). An item sends its requests one after
	// another, so items in flight are requests in flight.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// SkipPages: parser drift, fetch no store pages (lookups only) except
	// for the first PageProbes items, which probe whether pages parse again.
	SkipPages  bool `json:"skip_pages,omitempty"`
	PageProbes int  `json:"page_probes,omitempty"`
	// ProbeSeq numbers the probe runs (ParserHealth.Probes): when no picked
	// item is a clean candidate, the probe rotates through the picked
	// items by it.
	ProbeSeq int64 `json:"probe_seq,omitempty"`
	// TickSeq numbers the ticks (Totals.Ticks before this one): a share of
	// a tick's slots smaller than one slot is spread over consecutive
	// ticks by it (PickSpec.TickSeq).
	TickSeq int64 `json:"tick_seq,omitempty"`
	// Subrequests is the run's budget of platform calls and D1Queries its
	// budget of D1 queries within them (RunBudget).
	Subrequests int `json:"subrequests,omitempty"`
	D1Queries   int `json:"d1_queries,omitempty"`
	// LookupBatch is how many items share one lookup request (LOOKUP_BATCH;
	// DefaultLookupBatch when 0).
	LookupBatch int `json:"lookup_batch,omitempty"`
	// LookupRequests is the most lookup requests the run may send, the API
	// host's pace for this tick (0 = no limit of its own); items whose
	// batch would exceed it stay queued, untouched.
	LookupRequests int `json:"lookup_requests,omitempty"`
	// LookupFreshS: an item whose stored lookup fields are at most this
	// old (seconds) is not looked up again, only its page fetched (0 =
	// every item is looked up).
	LookupFreshS int64 `json:"lookup_fresh_s,omitempty"`
	// NoLookups: the API host is held and the store host is not; only the
	// items whose lookup is fresh run (their pages), the rest stay queued.
	NoLookups bool `json:"no_lookups,omitempty"`
	// TickItems is the most items, new apps and due refreshes, the run
	// may take (TickItems: the API host's lookups this tick × LookupBatch,
	// within ItemsPerTick); 0 means BatchSize. BatchSize is the store
	// host's pace, its pages: every new app takes one, a refresh only when
	// its lookup shows a change its page carries, so the refreshes that
	// need no page are bounded by this, not by the page pace.
	TickItems int `json:"tick_items,omitempty"`
	// PendingEnriched are apps enriched by earlier runs whose app-enriched
	// events could not be sent then (the controller's outbox): the run
	// sends them before its own.
	PendingEnriched []int64 `json:"pending_enriched,omitempty"`
	// HoldPartial: the run sends only full messages (events.MaxTrackIDs
	// apps each) and hands the rest back to the outbox, whose oldest app
	// is younger than AnnounceWithin (false: it sends every app).
	HoldPartial bool `json:"hold_partial,omitempty"`
}

// RequestOutcome is one upstream request as the run saw it: what the pacing
// algorithm learns from.
type RequestOutcome struct {
	// Item is the index among the run's attempted items of the item the
	// request was for; a lookup batch, one request for several items, is
	// reported once, under the first of them.
	Item         int   `json:"item"`
	SentAt       int64 `json:"sent_at"`
	DoneAt       int64 `json:"done_at"`
	Class        Class `json:"class"`
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
	// Remaining is the RateLimit-Remaining the answer carried (-1 = none).
	Remaining int   `json:"remaining"`
	ResetMs   int64 `json:"reset_ms,omitempty"`
	// AskedHoldMs is the longer hold the answer asked for when it was
	// capped at UPSTREAM_MAX_HOLD_S (RetryAfterMs/ResetMs hold the cap).
	AskedHoldMs int64 `json:"asked_hold_ms,omitempty"`
	// Kind is what was asked: RequestLookup or RequestPage.
	Kind string `json:"kind,omitempty"`
	// Local: refused by our own global limit, it never reached the upstream
	// (the pacing algorithm still learns from it; the upstream's cost does not).
	Local bool `json:"local,omitempty"`
}

// RequestOutcome.Kind values: the two upstream documents an app costs.
const (
	RequestLookup = "lookup"
	RequestPage   = "page"
)

// RunOutcome is what the run reports back.
type RunOutcome struct {
	// Picked counts the items attempted; Skipped the items picked but left
	// queued untouched because the run stopped at a refusal.
	Picked     int              `json:"picked"`
	Skipped    int              `json:"skipped,omitempty"`
	Results    []ItemResult     `json:"results"`
	Requests   []RequestOutcome `json:"requests,omitempty"`
	DurationMs int64            `json:"duration_ms"`
	// Error is a run-level failure (D1 unreachable, ...): nothing was dispatched.
	Error string `json:"error,omitempty"`
	// D1RowsRead and D1RowsWritten are what the run cost in D1, from D1's
	// own result metadata (pick, saves, requeues).
	D1RowsRead    int64 `json:"d1_rows_read,omitempty"`
	D1RowsWritten int64 `json:"d1_rows_written,omitempty"`
	// Subrequests counts every platform call the run made: limiter,
	// upstream, R2, D1 and Queue calls alike.
	Subrequests int `json:"subrequests,omitempty"`
	// UnsentEnriched are the enriched apps (the plan's PendingEnriched and
	// the run's own) whose app-enriched events were not sent: they go
	// (back) to the controller's outbox.
	UnsentEnriched []int64 `json:"unsent_enriched,omitempty"`
	// PagePuts counts the run's R2 puts of raw pages (R2 Class A): one for
	// the tick's batch of pages, tried again once on failure, and one for
	// any page that did not fit it.
	PagePuts int `json:"page_puts,omitempty"`
	// LimiterCalls counts the run's calls to the global limiter (its
	// leases' acquires): Durable Object requests.
	LimiterCalls int `json:"limiter_calls,omitempty"`
	// PagesFromR2 counts the run's items whose page was their stored one
	// (ItemResult.PageFromR2): pages not requested upstream.
	PagesFromR2 int `json:"pages_from_r2,omitempty"`
}

// Platform limits that shape a run. The budget is a setting
// (SUBREQUEST_BUDGET, Config.Subrequests): what one invocation (the
// controller's alarm, which runs the tick) may call out, fetches and calls
// to D1, R2, Queues and other Durable Objects alike.
const (
	// DefaultSubrequests is Workers Paid's 10,000 subrequests per request
	// (developers.cloudflare.com/workers/platform/limits/, "Subrequests:
	// 50/request Free, 10,000/request Paid").
	DefaultSubrequests = 10000
	// FreeSubrequests is Workers Free's 50 per request (same page): the
	// smallest budget the setting takes.
	FreeSubrequests = 50
	// D1QueriesPerInvocation is D1's own bound, apart from subrequests:
	// 1,000 queries per Worker invocation on Workers Paid, 50 on Free
	// (developers.cloudflare.com/d1/platform/limits/). A run's D1 calls
	// fit min(budget, this).
	D1QueriesPerInvocation = 1000
	// MaxTickReserve is kept for the tick's calls outside its items: the
	// pick, the events send, the controller's own ledger sends; a budget
	// smaller than MaxTickReserve×tickReserveShare keeps a fifth.
	MaxTickReserve   = 20
	tickReserveShare = 5
	// MaxD1PerItem is one item's D1 worst case: a lookup-only save and its
	// requeue (an enriched save is one batch).
	MaxD1PerItem = 2
	// MaxCallsPerFetch is one upstream call's worst case: the request and
	// the same-host redirects it may follow (upstream.MaxRedirects).
	MaxCallsPerFetch = 3
	// MaxLimiterCalls is one acquire's worst case at the global limiter:
	// the client's attempts (ratelimit.MaxAttempts).
	MaxLimiterCalls = 5
	// MaxCallsPerItem is one item's worst case: a retry's read of its
	// stored page (R2) that cannot be reused, its page's acquire, the page
	// (redirects included), the raw page to R2, and two D1 writes (a
	// lookup-only save and its requeue). A run sets it aside before it
	// starts an item and gets back what the item did not use.
	MaxCallsPerItem = 1 + MaxLimiterCalls + SubrequestsPerItem*MaxCallsPerFetch + 1 + 2
	// MaxCallsPerLookup is one lookup batch's worst case: its acquire and
	// the lookup (redirects included), shared by the batch's items.
	MaxCallsPerLookup = MaxLimiterCalls + MaxCallsPerFetch
	// SubrequestsPerItem is what an item costs the upstream, as the pacing
	// counts it: its store page. Its lookup rides in a batch of up to
	// LookupBatch items, one request for the whole batch, so a tick of n
	// items sends n + ceil(n/LookupBatch) requests; the pacing paces on the
	// requests actually sent, batch lookups included.
	SubrequestsPerItem = 1
	// PagePutCalls is set aside for the tick's one put of its raw pages
	// (one R2 object a tick): a failed put is tried once more.
	PagePutCalls = 2
	// MaxRetryAfter caps how long one Retry-After can delay the next tick.
	MaxRetryAfter = CooldownDuration
)

// Lookup batches (LOOKUP_BATCH): the iTunes lookup endpoint takes many
// comma-separated ids in one call, and each call counts against Apple's
// documented ~20 calls a minute of the Search API, so the lookups of a
// tick's items go in batches.
const (
	// DefaultLookupBatch is a conservative batch: half the cap below, so a
	// batch of apps at the store's text limits stays well inside one
	// answer's body bound (upstream.MaxBodyBytes), and a failed batch
	// holds back at most 100 apps.
	DefaultLookupBatch = 100
	// MaxLookupBatch is the most ids one lookup asks for. Apple documents
	// several comma-separated ids but no cap; the one report found is that
	// the real endpoint answers up to 200 app ids in one call
	// (facundoolano/app-store-scraper pull request #2, 2016). The
	// simulator enforces the same cap (cmd/upstream-sim).
	MaxLookupBatch = 200
	// MinLookupBatch: one id a call is the unbatched lookup.
	MinLookupBatch = 1
)

// tickReserve is what a budget keeps for the tick's calls outside its items.
func tickReserve(budget int) int { return min(MaxTickReserve, budget/tickReserveShare) }

// RunBudget is what a run's items may spend of an invocation's budget:
// calls (every platform call) and, within them, D1 queries.
func RunBudget(budget int) (calls, d1 int) {
	budget = min(max(budget, FreeSubrequests), DefaultSubrequests)
	queries := min(budget, D1QueriesPerInvocation)
	return budget - tickReserve(budget), queries - tickReserve(queries)
}

// ItemsPerTick is how many items a tick plans at most with lookups in
// batches of lookupBatch under an invocation's budget of subrequests: the
// items' and their batches' worst cases fit the run's calls, and the
// items' D1 worst cases its D1 queries. Under Workers Free's 50 it is 2:
// the crawl goes on in small ticks.
func ItemsPerTick(lookupBatch, budget int) int {
	batch := min(max(lookupBatch, MinLookupBatch), MaxLookupBatch)
	calls, queries := RunBudget(budget)
	calls -= PagePutCalls
	n := min(calls/MaxCallsPerItem, queries/MaxD1PerItem)
	for n > 0 && n*MaxCallsPerItem+(n+batch-1)/batch*MaxCallsPerLookup > calls {
		n--
	}
	return n
}

// TickItems is how many items a tick may take at most, new apps and due
// refreshes together, with lookupRequests lookups of lookupBatch ids
// allowed this tick (the API host's pace): one lookup each, within
// ItemsPerTick (every item's worst case, a page included, fits the
// invocation's subrequests and D1 queries). A refresh whose lookup shows
// no page-level change costs its share of a lookup and no page, so the
// refreshes a tick takes are bounded by this; only pages follow the
// store host's pace (the plan's BatchSize).
func TickItems(lookupRequests, lookupBatch, budget int) int {
	batch := min(max(lookupBatch, MinLookupBatch), MaxLookupBatch)
	return max(0, min(lookupRequests*batch, ItemsPerTick(batch, budget)))
}

// kindOf maps an outcome class to the pacing signal.
func kindOf(c Class) pacing.Kind {
	switch c {
	case ClassOK, ClassParseError, ClassStoreError:
		return pacing.KindOK // the upstream answered
	case ClassNotFound:
		return pacing.KindNotFound
	case ClassRateLimit:
		return pacing.KindThrottled
	case ClassServerError:
		return pacing.KindServerError
	default:
		return pacing.KindTimeout
	}
}

// PacingOutcomes converts a run's requests for the two pacing states: the
// store host's pages (pages) and the API host's lookups (lookups), each in
// send order. A lookup is its own pacing item (one request), numbered in
// the order the batches went out.
func (o RunOutcome) PacingOutcomes() (pages, lookups []pacing.Outcome) {
	for _, r := range o.Requests {
		po := pacing.Outcome{
			Item: r.Item, SentAt: time.UnixMilli(r.SentAt), DoneAt: time.UnixMilli(r.DoneAt),
			Kind: kindOf(r.Class), RetryAfter: time.Duration(r.RetryAfterMs) * time.Millisecond,
			Remaining: r.Remaining, Reset: time.Duration(r.ResetMs) * time.Millisecond,
		}
		if r.Kind == RequestLookup {
			po.Item = len(lookups)
			lookups = append(lookups, po)
			continue
		}
		pages = append(pages, po)
	}
	return pages, lookups
}

// Record adds a run's outcome to the minute bucket at now and the totals.
func (s *State) Record(o RunOutcome, now time.Time) map[string]int {
	byClass := map[string]int{}
	b := s.bucket(now)
	b.Dispatched += o.Picked
	s.Totals.Dispatched += int64(o.Picked)
	s.Totals.D1RowsRead += o.D1RowsRead
	s.Totals.D1RowsWritten += o.D1RowsWritten
	s.Totals.PagePuts += int64(o.PagePuts)
	s.Totals.LimiterCalls += int64(o.LimiterCalls)
	s.Totals.PagesFromR2 += int64(o.PagesFromR2)
	for _, r := range o.Results {
		byClass[string(r.Class)]++
		s.Totals.SimilarDiscovered += int64(r.Discovered)
		switch {
		case r.Refresh && r.Class == ClassOK && (r.Unchanged || r.Page == PageParsed):
			// A refresh stored: not a new app, so not Completed.
			s.Totals.Refreshed++
			if r.Unchanged {
				s.Totals.RefreshesUnchanged++
			}
		case r.Refresh && r.Class == ClassOK:
			// A refresh whose page is pending: still due, not failed.
			if r.PageDeferred {
				s.Totals.RefreshPagesDeferred++
			}
		case r.Class == ClassOK && r.Page == PageSkipped:
			// Looked up, page pending (parser drift): not complete, not failed.
		case r.Class == ClassOK:
			b.Completed++
			s.Totals.Completed++
		case r.Class.CountsAgainstUpstream():
			b.Failed++
			s.Totals.Failed++
			if r.Class == ClassRateLimit {
				b.RateLimited++
				s.Totals.RateLimited++
			}
		default:
			b.ItemErrors++
			s.Totals.ItemErrors++
		}
		if r.GaveUp {
			s.Totals.GaveUp++
		}
		if r.Deferred {
			s.Totals.Deferred++
		}
		if r.StoredLookup {
			s.Totals.LookupsSkipped++
		}
	}
	for _, r := range o.Requests {
		if !r.Local {
			refused := int64(0)
			if r.Class == ClassRateLimit {
				refused = 1
			}
			switch r.Kind {
			case RequestLookup:
				s.Totals.LookupRequests++
				s.Totals.LookupRefusals += refused
			case RequestPage:
				s.Totals.PageRequests++
				s.Totals.PageRefusals += refused
			}
		}
		if r.AskedHoldMs > 0 {
			held := max(r.RetryAfterMs, r.ResetMs)
			s.LastHoldCapped = &HoldCapped{At: now.UnixMilli(), AskedS: r.AskedHoldMs / 1000, HeldS: held / 1000}
			s.Totals.HoldsCapped++
		}
	}
	return byClass
}

// retryAfter is the longest Retry-After any refused item carried, capped.
func retryAfter(o RunOutcome) time.Duration {
	var max time.Duration
	for _, r := range o.Results {
		if d := time.Duration(r.RetryAfterS) * time.Second; d > max {
			max = d
		}
	}
	if max > MaxRetryAfter {
		max = MaxRetryAfter
	}
	return max
}
