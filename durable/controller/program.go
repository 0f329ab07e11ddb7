package controller

import (
	"cmp"
	"slices"
	"time"
)

// A tick is a program. The controller's tick decision (RunPlan) sizes the
// tick: what the Worker picks (RunPlan.Pick) and what each host may take.
// Once the items are picked, Compile turns the plan and those items into
// the Program: every item in the order it runs, where its lookup comes
// from, whether it fetches its page, the lookup requests in send order,
// the page slots, the chunking and what the run may spend. The Worker
// performs the program and decides nothing it lists; it only does less,
// for what the program cannot know before the requests go out: a budget
// spent, a refusal the program stops on, pages that stop parsing, a
// refresh whose lookup shows no change.

// LookupSource says where an item's lookup comes from.
type LookupSource string

const (
	// LookupStored: its stored lookup fields are fresh (RunPlan.LookupFreshS):
	// no lookup is sent for it.
	LookupStored LookupSource = "stored"
	// LookupBatch: it is looked up in one of the program's Lookups.
	LookupBatch LookupSource = "batch"
	// LookupNone: the tick's lookups are spent (the API host's pace, or
	// held): it stays queued, untouched.
	LookupNone LookupSource = "none"
)

// PageRule says whether an item fetches its store page, its lookup in hand.
type PageRule string

const (
	// PageFetch: a new app, its page fetched once its lookup found it.
	PageFetch PageRule = "fetch"
	// PageIfChanged: a due refresh, its page fetched only when its lookup
	// shows a change the page carries, and only while a page slot is left.
	PageIfChanged PageRule = "if_changed"
	// PageProbe: pages are paused (parser drift) and this item probes
	// whether they parse again.
	PageProbe PageRule = "probe"
	// PageNone: pages are paused: its lookup is kept, its page waits.
	PageNone PageRule = "none"
)

// Candidate is one picked item as the program sees it: plain data.
type Candidate struct {
	TrackID int64 `json:"track_id"`
	// LookupAt is when its stored lookup fields were stored (zero: it has
	// none).
	LookupAt time.Time `json:"lookup_at"`
	// PriorParseError and PageUnparsed: its last attempt ended in a parse
	// error, its stored page did not parse. Either makes it a poor probe.
	PriorParseError bool `json:"prior_parse_error,omitempty"`
	PageUnparsed    bool `json:"page_unparsed,omitempty"`
	// Refresh: an enriched app whose refresh came due.
	Refresh bool `json:"refresh,omitempty"`
}

// Step is one item of the program.
type Step struct {
	TrackID int64 `json:"track_id"`
	// Pick is the item's index among the candidates Compile was given.
	Pick    int          `json:"pick"`
	Lookup  LookupSource `json:"lookup"`
	Page    PageRule     `json:"page"`
	Refresh bool         `json:"refresh,omitempty"`
}

// MayFetch says whether the step fetches its page, its lookup having
// found it: a probe always, the others unless the run's pages tripped
// (PageTally.RunTripped), a refresh only when it changed (the Worker's
// fingerprint check) and a slot is left.
func (s Step) MayFetch(tripped bool) bool {
	switch s.Page {
	case PageProbe:
		return true
	case PageFetch, PageIfChanged:
		return !tripped
	}
	return false
}

// Lookup is one lookup request of the program: the steps [From, To) in
// one batch, sent in the order the program lists them.
type Lookup struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Chunking is how the steps go out: ChunkItems items that fetch pages (and
// up to RideAlong refreshes that fetch none) at once, ChunkPauseMs between
// chunks that reached the upstream, at most MaxInFlight in flight (0: the
// runtime's connections), stopping after a refusal when StopOnThrottle.
type Chunking struct {
	ChunkItems     int   `json:"chunk_items"`
	ChunkPauseMs   int64 `json:"chunk_pause_ms,omitempty"`
	StopOnThrottle bool  `json:"stop_on_throttle,omitempty"`
	MaxInFlight    int   `json:"max_in_flight,omitempty"`
	RideAlong      int   `json:"ride_along"`
}

// Spend is what the run may spend: its budgets of platform calls and D1
// queries, and each item's and lookup's worst case set aside from them
// before it starts (the unused part given back).
type Spend struct {
	Subrequests    int `json:"subrequests"`
	D1Queries      int `json:"d1_queries"`
	ItemCalls      int `json:"item_calls"`
	ItemD1Queries  int `json:"item_d1_queries"`
	LookupCalls    int `json:"lookup_calls"`
	PagePutCalls   int `json:"page_put_calls"`
	LookupRequests int `json:"lookup_requests"` // the API host's: len(Lookups)
	PageSlots      int `json:"page_slots"`      // the store host's: Program.Pages
}

// Program is what one tick does.
type Program struct {
	TickAt int64  `json:"tick_at"`
	Steps  []Step `json:"steps"`
	// Lookups are the lookup requests, in send order; the steps they
	// cover follow the stored-lookup steps and precede the LookupNone ones.
	Lookups []Lookup `json:"lookups,omitempty"`
	// Pages is the store host's pace for the tick: page slots taken in
	// step order as lookups come back, new apps first (their share kept
	// when the Worker shared the tick), a changed refresh past them left
	// in its tier's window.
	Pages    int      `json:"pages"`
	Chunking Chunking `json:"chunking"`
	Spend    Spend    `json:"spend"`
	// PendingEnriched are the outbox's apps whose events the run sends first.
	PendingEnriched []int64 `json:"pending_enriched,omitempty"`
	// HoldPartial is the plan's (RunPlan.HoldPartial).
	HoldPartial bool `json:"hold_partial,omitempty"`
}

// RideAlong bounds the refreshes that fetch no page (unchanged, or left)
// in one chunk beside its ChunkItems other items. The plan sizes a chunk,
// and the pause after it, to its pages at the store host's pace: page-less
// items counted in it would stretch a tick of a few pages among hundreds
// of refreshes over a pause a chunk. A chunk's items run at once: 24 is
// four rounds of the runtime's six connections (pacing.MaxConnections),
// so a tick's few hundred refreshes go in tens of chunks, never hundreds
// of calls at once.
const RideAlong = 4 * 6

// PickSpec is what the Worker picks for a tick: up to Queue queued items
// (UnlookedOnly: only those without a lookup-only record) and, when
// Refreshes > 0, up to Refreshes due refreshes, shared with the queue's
// items within Pages (the store host's pace) and Refreshes.
type PickSpec struct {
	Queue        int
	UnlookedOnly bool
	Refreshes    int
	Pages        int
	// TickSeq is the plan's (RunPlan.TickSeq): the refreshes' share of the
	// pages is spread over consecutive ticks by it.
	TickSeq int64
}

// Pick is what the plan's tick picks. While pages are paused, items already
// looked up wait for the pages: only the probes may take any item. No
// refresh runs while pages are paused or lookups held: a refresh needs its
// lookup, and its page when the app changed.
func (p RunPlan) Pick() PickSpec {
	s := PickSpec{Queue: p.BatchSize, UnlookedOnly: p.SkipPages && p.PageProbes == 0, Pages: p.BatchSize, TickSeq: p.TickSeq}
	if !p.SkipPages && !p.NoLookups && p.BatchSize > 0 {
		s.Refreshes = max(p.TickItems, p.BatchSize)
	}
	return s
}

// FreshLookup is the fresh-lookup rule: an item whose stored lookup is at
// most fresh old at now needs no lookup, only its page.
func FreshLookup(c Candidate, now time.Time, fresh time.Duration) bool {
	return fresh > 0 && !c.LookupAt.IsZero() && now.Sub(c.LookupAt) <= fresh
}

// Compile is the program of plan's tick over the picked items at now.
// Order: the items with a fresh stored lookup first (their pages start the
// run), then the others in lookup batches of LookupBatch, at most
// LookupRequests of them (none under NoLookups); the rest wait. While
// pages are paused (SkipPages) every item is looked up, and the probes go
// first (orderProbes).
func Compile(plan RunPlan, items []Candidate, now time.Time) Program {
	p := Program{
		TickAt: now.UnixMilli(), Pages: max(plan.BatchSize, 0),
		Chunking: Chunking{ChunkItems: max(plan.ChunkItems, 1), ChunkPauseMs: plan.ChunkPauseMs,
			StopOnThrottle: plan.StopOnThrottle, MaxInFlight: plan.MaxInFlight, RideAlong: RideAlong},
		Spend:           plan.Spend(),
		PendingEnriched: plan.PendingEnriched,
		HoldPartial:     plan.HoldPartial,
	}
	if plan.TickAt > 0 {
		p.TickAt = plan.TickAt
	}
	fresh := time.Duration(plan.LookupFreshS) * time.Second
	if plan.SkipPages {
		fresh = 0 // no page would follow: a lookup-only run has nothing to skip
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	stored := func(i int) bool { return FreshLookup(items[i], now, fresh) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(b2i(!stored(a)), b2i(!stored(b))) })
	if plan.SkipPages && plan.PageProbes > 0 {
		order = orderProbes(order, items, plan.ProbeSeq)
	}
	p.Steps = make([]Step, len(order))
	nStored := 0
	for j, i := range order {
		c := items[i]
		s := Step{TrackID: c.TrackID, Pick: i, Lookup: LookupNone, Page: PageFetch, Refresh: c.Refresh}
		switch {
		case plan.SkipPages && j < plan.PageProbes:
			s.Page = PageProbe
		case plan.SkipPages:
			s.Page = PageNone
		case c.Refresh:
			s.Page = PageIfChanged
		}
		if stored(i) {
			s.Lookup = LookupStored
			nStored++
		}
		p.Steps[j] = s
	}
	p.Lookups = lookupBatches(plan, nStored, len(p.Steps))
	for _, l := range p.Lookups {
		for j := l.From; j < l.To; j++ {
			p.Steps[j].Lookup = LookupBatch
		}
	}
	p.Spend.LookupRequests, p.Spend.PageSlots = len(p.Lookups), p.Pages
	return p
}

// Spend is the run's budgets, the plan's or the defaults' when it names
// none, and each item's and lookup's worst case. The run's pick spends
// from them too, before its program is compiled.
func (plan RunPlan) Spend() Spend {
	calls, queries := RunBudget(DefaultSubrequests)
	return Spend{
		Subrequests: cmp.Or(max(plan.Subrequests, 0), calls), D1Queries: cmp.Or(max(plan.D1Queries, 0), queries),
		ItemCalls: MaxCallsPerItem, ItemD1Queries: MaxD1PerItem, LookupCalls: MaxCallsPerLookup, PagePutCalls: PagePutCalls,
	}
}

// lookupBatches splits the steps [from, n) into lookup requests of the
// plan's LookupBatch ids, up to its LookupRequests (0: no limit of its
// own), none under NoLookups.
func lookupBatches(plan RunPlan, from, n int) []Lookup {
	if plan.NoLookups {
		return nil
	}
	size := min(max(cmp.Or(plan.LookupBatch, DefaultLookupBatch), MinLookupBatch), MaxLookupBatch)
	var out []Lookup
	for i := from; i < n; i += size {
		if plan.LookupRequests > 0 && len(out) == plan.LookupRequests {
			break
		}
		out = append(out, Lookup{From: i, To: min(i+size, n)})
	}
	return out
}

// orderProbes puts the probe items first: while pages are paused the first
// items probe whether pages parse again, and a probe must ask the markup,
// not one app's broken page. Clean candidates go first: apps whose page
// has not failed to parse. When none was picked, the probes rotate through
// the picked items by seq, so the same broken app is never probed forever.
func orderProbes(order []int, items []Candidate, seq int64) []int {
	clean := func(i int) bool { return !items[i].PriorParseError && !items[i].PageUnparsed }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(b2i(!clean(a)), b2i(!clean(b))) })
	if len(order) == 0 || clean(order[0]) {
		return order
	}
	k := int(seq % int64(len(order)))
	return append(append([]int(nil), order[k:]...), order[:k]...)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
