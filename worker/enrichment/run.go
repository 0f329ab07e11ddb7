// Package enrichment performs what the EnrichmentController decides
// (durable/controller decides; this package performs): one run picks queued
// apps, enriches each (lookup JSON + store page, one D1 batch), keeps the
// tick's raw pages in one R2 object (worker/pagebatch), settles every item, and reports per-item outcomes for the
// controller to learn from. Storage, the upstream and the queue sit behind
// small interfaces with plain-Go implementations (D1Store over worker/d1),
// so the whole run is tested natively.
package enrichment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/appstore"
	"storecrawl/worker/bytebudget"
	"storecrawl/worker/events"
	"storecrawl/worker/logx"
	"storecrawl/worker/pagebatch"
	"storecrawl/worker/refresh"
	"storecrawl/worker/subreq"
	"storecrawl/worker/upstream"
)

// QueuedItem is a work item picked from the queue.
type QueuedItem struct {
	TrackID  int64
	Attempts int
	// Defers counts the upstream-level failures in a row that deferred it.
	Defers int
	// Lookup is the app's stored lookup fields and LookupAt when they were
	// stored (from a lookup or a search result); nil when it has none.
	Lookup   *appstore.App
	LookupAt time.Time
	// PriorParseError: its last attempt ended in a parse error (it may
	// have been given up and put back by retry-failed since).
	PriorParseError bool
	// PageStatus is its stored page's status ("" never fetched, PagePending,
	// PageUnparsedStatus).
	PageStatus string
	// HTMLKey is its stored raw page's reference (html_r2_key), "" when none
	// was kept: a retry may reuse it (ReuseCandidate).
	HTMLKey string
	// Refresh is set for an enriched app whose refresh came due (not a
	// queued item): it is always looked up, and settled by settleRefresh.
	Refresh *DueRefresh
}

// Candidates are the picked items as the controller's program sees them
// (controller.Compile), in pick order.
func Candidates(items []QueuedItem) []controller.Candidate {
	out := make([]controller.Candidate, len(items))
	for i, it := range items {
		out[i] = controller.Candidate{TrackID: it.TrackID, PriorParseError: it.PriorParseError,
			PageUnparsed: it.PageStatus == PageUnparsedStatus, Refresh: it.Refresh != nil}
		if it.Lookup != nil {
			out[i].LookupAt = it.LookupAt
		}
	}
	return out
}

// Record is one enriched app, ready to store.
type Record struct {
	App  appstore.App
	Page appstore.StorePage
	// HTMLKey is the raw page's reference (pagebatch.Ref) in html_r2_key.
	HTMLKey   string
	FetchedAt time.Time
	// LookupAt is when App's fields were fetched: FetchedAt when zero (the
	// run's own lookup), earlier for a fresh stored lookup.
	LookupAt time.Time
	// Refresh: the app is enriched already (a due refresh), so the save
	// leaves its state (enrichment_source) as it is (SaveStatements).
	Refresh bool
}

// PageMeta describes a stored raw page (its batch member's gzip header,
// pagebatch.Header): when it was fetched, its HTTP status, what the parser
// made of it and which parser.
type PageMeta struct {
	ScrapedAt     time.Time
	Status        int
	Format        appstore.Format // "" when it did not parse
	Outcome       string          // controller.PageParsed, PageUnparsed, PageSoftBlock
	ParserVersion int
}

// Map is the metadata as strings.
func (m PageMeta) Map() map[string]string {
	return map[string]string{
		"scraped_at": m.ScrapedAt.UTC().Format(time.RFC3339), "status": strconv.Itoa(m.Status),
		"format": string(m.Format), "outcome": m.Outcome, "parser_version": strconv.Itoa(m.ParserVersion),
	}
}

// Store is the work queue and the enriched-data store (D1).
type Store interface {
	// PickQueued returns up to n queued items due at now (not deferred
	// past it), highest priority first; with unlookedOnly, only those
	// without a lookup-only record yet.
	PickQueued(ctx context.Context, n int, unlookedOnly bool, now time.Time) ([]QueuedItem, error)
	// SaveEnriched writes the record and dequeues the item, atomically,
	// and queues the page's similar apps not known yet: it returns how
	// many it queued.
	SaveEnriched(ctx context.Context, r Record) (discovered int, err error)
	// SaveLookup keeps a lookup whose page is pending (not fetched, or not
	// parsed): enrichment_source 'itunes', the item left queued. htmlKey is
	// the stored raw page, "" when none was fetched; pageStatus says why
	// the page is pending.
	SaveLookup(ctx context.Context, app appstore.App, htmlKey, pageStatus string, at time.Time) error
	// MarkMissing dequeues an item the upstream does not know.
	MarkMissing(ctx context.Context, id int64, at time.Time) error
	// Requeue leaves the item queued with its attempt count and last error;
	// pageRef, when not "", is the page the attempt stored (its save
	// failed), kept in html_r2_key for the retry to reuse.
	Requeue(ctx context.Context, id int64, attempts int, class controller.Class, errText, pageRef string) error
	// Defer leaves the item queued, its attempts untouched, not to be
	// picked before until (an upstream-level failure, the defers-th in a row).
	Defer(ctx context.Context, id int64, defers int, class controller.Class, errText string, until time.Time) error
	// GiveUp marks the item failed: dequeued and kept, until an operator's
	// retry-failed call or the retry-failed task puts it back in the queue;
	// pageRef is Requeue's.
	GiveUp(ctx context.Context, id int64, attempts int, class controller.Class, errText, pageRef string, at time.Time) error
}

// HTMLCache keeps raw store pages (R2): one object of pages gzipped
// (pagebatch), a tick's batch or a page that did not fit it.
type HTMLCache interface {
	PutPages(ctx context.Context, key string, body []byte, pages int) error
}

// Events announces enriched apps for event-driven analysis (Queues).
type Events interface {
	AppsEnriched(ctx context.Context, ids []int64) error
}

// Fetcher is the upstream client.
type Fetcher interface {
	Get(ctx context.Context, url string) upstream.Response
}

// TickBodyBytes bounds the upstream bodies one run (one tick) holds at once.
// A page lives until its item is settled, and the pacing sizes a chunk to a
// second of requests, so dozens of items run together: 78 pages ×
// upstream.MaxBodyBytes is 312 MB against the isolate's 128 MB,
// shared by the JS runtime and the Go instance. The Go wasm heap never
// gives memory back, and with the GC's default headroom and io.ReadAll's
// doubling buffers it runs to two or three times the bytes held, so 24 MB
// of bodies stays within ~70 MB of heap. Store pages are ~100 KB: a normal
// tick is far under it. A lookup batch's body (~7 KB an app) is parsed and
// given back before the pages of its items are fetched.
const TickBodyBytes = 24 << 20

// Runner holds what a run needs.
type Runner struct {
	Store     Store
	HTML      HTMLCache
	Events    Events
	Upstream  Fetcher
	APIBase   string // e.g. https://itunes.apple.com
	StoreBase string // e.g. https://apps.apple.com
	Country   string
	Now       func() time.Time
	Sleep     func(time.Duration)
	// Limit, when set, runs fn once the global limit (the OmniLimiter)
	// admits cost upstream requests; ErrLimited means it did not in time.
	Limit func(ctx context.Context, cost int, fn func(context.Context) error) error
	// PageLimit, when set, is Limit for the store pages: the store host's
	// own global limit (the API host's lookups go through Limit).
	PageLimit func(ctx context.Context, cost int, fn func(context.Context) error) error
	// ReservePages, when set, admits n store pages of PageLimit and
	// returns ctx carrying them: the pages of a lookup batch's items take
	// their slots from it instead of an acquire each. ReserveLookups is
	// the same for the run's lookup batches under Limit. Through a lease
	// (GlobalLease) a reservation is one acquire for several ticks: each
	// acquire is a Durable Object request.
	ReservePages   func(ctx context.Context, n int) context.Context
	ReserveLookups func(ctx context.Context, n int) context.Context
	// LimiterCalls, when set, reads how many limiter calls the leases have
	// made so far: a run reports its own (RunOutcome.LimiterCalls), each
	// a Durable Object request.
	LimiterCalls func() int64
	// BodyBytes bounds the bodies a run holds at once (TickBodyBytes when 0).
	BodyBytes int64
	// Refreshes, when set, serves due refreshes beside the queue: they get
	// RefreshShare of a tick's slots when never-enriched apps wait too, and
	// every slot the queue leaves (refresh.Split).
	Refreshes    RefreshStore
	RefreshShare float64
	// Stored, when set, reads stored pages back (R2): a retried item whose
	// page is there and at most PageReuse old (ENRICHMENT_PAGE_REUSE_H;
	// 0: never) is parsed from it, with no page request (reuse.go).
	Stored    StoredPages
	PageReuse time.Duration
}

// ErrLimited is what Limit returns when the global limit had no room.
var ErrLimited = errors.New("global rate limit: no slot in time")

// LookupURL is the one lookup of several apps: the real endpoint takes
// comma-separated ids and answers those it knows (appstore.ParseLookupBatch).
func (r *Runner) LookupURL(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return r.APIBase + "/lookup?id=" + strings.Join(parts, ",") + "&country=" + r.Country
}

// PageURL is an app's store page.
func (r *Runner) PageURL(id int64) string {
	return r.StoreBase + "/" + r.Country + "/app/id" + strconv.FormatInt(id, 10)
}

// HTMLKey is where an app's raw page was kept in R2 before pages went in
// batches (one object a page, uncompressed): such keys are still read
// (pagebatch.ParseRef, a whole object).
func HTMLKey(country string, id int64) string {
	return "store-pages/" + country + "/" + strconv.FormatInt(id, 10) + ".html"
}

// Run performs plan's tick: it picks what the plan says (RunPlan.Pick),
// compiles the tick's program over the picked items (controller.Compile)
// and performs it. It never fails as a whole once items are picked: every
// item is settled and reported; a failure to pick is a run-level error.
func (r *Runner) Run(ctx context.Context, plan controller.RunPlan) controller.RunOutcome {
	t := r.newTickRun(ctx, plan.Spend())
	pick := plan.Pick()
	items, err := r.Store.PickQueued(t.ctx, pick.Queue, pick.UnlookedOnly, t.start)
	if err != nil {
		return controller.RunOutcome{Error: "pick queued items: " + err.Error(), DurationMs: r.Now().Sub(t.start).Milliseconds(), Subrequests: t.calls.Used()}
	}
	items, t.refreshes = r.withRefreshes(t.ctx, items, pick, t.start)
	return t.perform(controller.Compile(plan, Candidates(items), t.start), items)
}

// Perform executes prog over items, the candidates it was compiled from in
// their pick order, and reports what became of each step it attempted.
func (r *Runner) Perform(ctx context.Context, prog controller.Program, items []QueuedItem) controller.RunOutcome {
	return r.newTickRun(ctx, prog.Spend).perform(prog, items)
}

// perform runs the program's steps: its items in the program's order, the
// run's end set aside, then the steps chunk by chunk.
func (t *tickRun) perform(prog controller.Program, items []QueuedItem) controller.RunOutcome {
	t.prog = prog
	t.items = make([]QueuedItem, len(prog.Steps))
	for j, s := range prog.Steps {
		t.items[j] = items[s.Pick]
		if s.Lookup == controller.LookupStored && t.nFresh == j {
			t.nFresh++ // the program lists its stored-lookup steps first
		}
	}
	t.setAside()
	t.startItems()
	t.enrich()
	return t.outcome()
}

// tickRun is one run, from its pick to its outcome: the budgets its
// platform calls spend from, what it sets aside for its end, its items in
// the order they run and what became of each, and the per-chunk state
// (itemLoop).
type tickRun struct {
	r     *Runner
	prog  controller.Program
	start time.Time
	// ctx carries the run's budgets and body budget, and once set aside
	// its tick pages (tickPagesKey): what every item's context derives from.
	ctx context.Context
	// calls and queries are the run's budgets: its platform calls and,
	// apart, its D1 queries (subreq); the sizes are for the budget event.
	calls, queries         *subreq.Budget
	callsSize, queriesSize int
	limiterCalls0          int64 // the leases' limiter calls before the run
	// items are the program's, item j the one of its step j.
	items     []QueuedItem
	refreshes *refreshRun // nil: no refresh
	runEnd
	// nFresh: items [0, nFresh) have their stored lookup (the program's
	// LookupStored steps) and need none.
	nFresh    int
	results   []controller.ItemResult
	requests  [][]controller.RequestOutcome
	lookups   []lookupOutcome               // item j's lookup: its batch's, fetched before its chunk
	batchReqs [][]controller.RequestOutcome // the lookup request of the batch that starts at item j
	attempted int                           // items [0, attempted) were settled; the rest stay queued, untouched
	itemLoop
}

// runEnd is what a run sets aside before any item starts for the calls it
// makes after its items, so items never eat them: the tick pages' put
// (putPages), the refresh cursors' write and the events' send. A nil share
// is one that did not fit.
type runEnd struct {
	tick                    *tickPages
	put                     *subreq.Budget
	advance, advanceQueries *subreq.Budget
	events                  *subreq.Budget
	eventsOK                bool
}

// itemLoop is the state enrich carries from chunk to chunk.
type itemLoop struct {
	chunk     int
	looked    int             // items [0, looked) have their lookup
	lookupCtx context.Context // carries the run's lookup slots, once reserved
	// pageCtx carries the page slots reserved for the items up to
	// reservedTo (one acquire a group of looked-up items: pageGroups).
	pageCtx    context.Context
	reservedTo int
	// gate is the connections a chunk's items send their pages through:
	// the runtime's six, or the pacing's bound when fewer (an upstream
	// whose burst is under six refuses the rest of a round); where the program
	// stops on a refusal, no item starts once one has come back.
	gate *connectionGate
	// pages tallies the settled items' pages: pages nobody can read turn
	// them off for the rest of the run (RunTripped).
	pages controller.PageTally
	// slots is the store host's pace for the tick: its pages, taken in
	// item order as lookups come back (new apps first, their share kept
	// by ShareTick); a refresh past them is left in its tier's window.
	slots       *pageSlots
	outOfBudget bool
	lookupsSent int // the program's Lookups sent (or cut by the budget)
}

// newTickRun starts a run's clock and its budgets: every platform call of
// the run is counted against the invocation's budget, and D1 bounds its
// queries apart; each item's worst case of both is set aside before it
// starts. Every body the run's upstream calls read holds room until its
// item is settled.
func (r *Runner) newTickRun(ctx context.Context, spend controller.Spend) *tickRun {
	t := &tickRun{r: r, start: r.Now()}
	t.limiterCalls0 = r.limiterCalls()
	t.callsSize, t.queriesSize = spend.Subrequests, spend.D1Queries
	ctx, t.calls = subreq.With(ctx, t.callsSize)
	t.queries = subreq.NewBudget(t.queriesSize)
	ctx = subreq.WithQueries(ctx, t.queries)
	t.ctx = upstream.WithBodyBudget(ctx, bytebudget.New(cmp.Or(r.BodyBytes, TickBodyBytes)))
	return t
}

// setAside reserves the run's end (runEnd). The tick's pages go in one
// object, put once after its items; the events' send takes one call for
// each message the run may send (its items' and the outbox's apps), and
// what cannot be set aside, or sent, goes back to the controller's outbox.
func (t *tickRun) setAside() {
	t.tick = &tickPages{}
	var putOK bool
	t.put, putOK = t.calls.Reserve(t.prog.Spend.PagePutCalls)
	if putOK && len(t.items) > 0 {
		t.tick.batch = pagebatch.NewBatch(pagebatch.ObjectKey(t.r.Country, t.tickAt(), t.items[0].TrackID))
	}
	t.ctx = context.WithValue(t.ctx, tickPagesKey{}, t.tick)
	if t.refreshes != nil {
		t.advance, _ = t.calls.Reserve(1)
		t.advanceQueries, _ = t.queries.Reserve(1)
	}
	t.events, t.eventsOK = t.calls.Reserve(eventMessages(len(t.items) + len(t.prog.PendingEnriched)))
}

// tickAt is the tick the run performs (its pages' batch is named by it),
// the run's start when the program does not say.
func (t *tickRun) tickAt() time.Time {
	if t.prog.TickAt > 0 {
		return time.UnixMilli(t.prog.TickAt)
	}
	return t.start
}

// startItems makes room for what becomes of each item and sets up the
// per-chunk state.
func (t *tickRun) startItems() {
	n := len(t.items)
	t.results = make([]controller.ItemResult, n)
	t.requests = make([][]controller.RequestOutcome, n)
	t.lookups = make([]lookupOutcome, n)
	t.batchReqs = make([][]controller.RequestOutcome, n)
	t.chunk = max(t.prog.Chunking.ChunkItems, 1)
	t.lookupCtx, t.pageCtx = t.ctx, t.ctx
	t.gate = newConnectionGate(t.prog.Chunking)
	pageCap := NoRefreshPageCap
	if t.refreshes != nil {
		pageCap = t.refreshes.pageCap
	}
	t.slots = newPageSlots(t.prog.Pages, n, pageCap)
}

// enrich settles the items chunk by chunk, each chunk's lookups first.
// It stops where the budget, the program's lookups or a refusal the
// program stops on says: the items past attempted stay queued, untouched.
func (t *tickRun) enrich() {
	for i := 0; i < len(t.items); {
		if i == t.looked && i < t.nFresh {
			t.useStoredLookups(i)
		}
		if i == t.looked && !t.lookUp(i) {
			break
		}
		// Pages nobody can read: the rest of this run looks up only.
		tripped := t.pages.RunTripped()
		end := t.slots.chunkEnd(t.prog, t.items, t.lookups, i, t.looked, t.chunk, tripped)
		shares := t.reserveItems(i, end)
		if end = i + len(shares.calls); end == i {
			break
		}
		t.reservePages(i, end, shares, tripped)
		end = t.settleChunk(i, end, shares, tripped)
		sent := 0
		for j := i; j < end; j++ {
			sent += len(t.requests[j])
			t.pages.AddResult(t.results[j])
		}
		refused := anyRefused(t.results[i:end])
		t.attempted, i = end, end
		if t.prog.Chunking.StopOnThrottle && refused {
			break // the rest stay queued, untouched: the pacing algorithm decides when to retry
		}
		// Pause between chunks that reached the upstream, so a batch does
		// not reach it as one burst.
		more := end < t.looked || (end < len(t.items) && !t.outOfBudget)
		if more && t.prog.Chunking.ChunkPauseMs > 0 && sent > 0 {
			t.r.Sleep(time.Duration(t.prog.Chunking.ChunkPauseMs) * time.Millisecond)
		}
	}
}

// useStoredLookups gives the LookupStored items from i their lookups:
// their stored fields, no request (an item that has none fails as our own
// error, and stays queued).
func (t *tickRun) useStoredLookups(i int) {
	for j := i; j < t.nFresh; j++ {
		if t.items[j].Lookup == nil {
			t.lookups[j] = lookupOutcome{class: controller.ClassStoreError, err: "program: no stored lookup"}
			continue
		}
		t.lookups[j] = lookupOutcome{app: *t.items[j].Lookup, class: controller.ClassOK, stored: true, lookupAt: t.items[j].LookupAt}
	}
	t.slots.allot(t.items[i:t.nFresh], t.lookups[i:t.nFresh], i)
	t.looked = t.nFresh
}

// lookUp sends the program's next lookup, the one that starts at item i:
// as many of its items as still fit the budgets with their worst case and
// the lookup's own; the rest stay queued, untouched, for the next tick.
// false means no lookup was sent (the program's are spent, or the budget)
// and the run starts no more items.
func (t *tickRun) lookUp(i int) bool {
	if t.outOfBudget || t.lookupsSent == len(t.prog.Lookups) || t.prog.Lookups[t.lookupsSent].From != i {
		return false // the program's lookups are spent: the rest stay queued, untouched
	}
	batch, spend := t.prog.Lookups[t.lookupsSent], t.prog.Spend
	t.lookupsSent++
	fit := min((t.calls.Remaining()-spend.LookupCalls)/max(spend.ItemCalls, 1), t.queries.Remaining()/max(spend.ItemD1Queries, 1))
	full := min(batch.To, len(t.items)) - i
	n := min(full, max(fit, 0))
	share, ok := t.calls.Reserve(spend.LookupCalls)
	if n < full || !ok {
		t.outOfBudget = true
		logx.Event("controller.subrequest_budget", map[string]any{"level": logx.Warn,
			"used": t.calls.Used(), "budget": t.callsSize, "d1_queries": t.queries.Used(), "d1_budget": t.queriesSize, "items_left": len(t.items) - i - n})
	}
	if n == 0 || !ok {
		if ok {
			share.Close()
		}
		return false
	}
	if t.lookupsSent == 1 && t.r.ReserveLookups != nil {
		// The run's lookup batches in one reservation, its call charged to
		// this batch's share (which holds its acquire).
		t.lookupCtx = t.r.ReserveLookups(subreq.WithBudget(t.ctx, share), len(t.prog.Lookups))
	}
	t.looked = i + n
	outs, req := t.r.lookupBatch(subreq.WithBudget(t.lookupCtx, share), t.items[i:t.looked], i)
	copy(t.lookups[i:t.looked], outs)
	t.slots.allot(t.items[i:t.looked], t.lookups[i:t.looked], i)
	share.Close()
	if req != nil {
		t.batchReqs[i] = append(t.batchReqs[i], *req)
	}
	return true
}

// itemShares are a chunk's items' shares of the run's budgets, item i+k's
// at k: its calls' and its D1 queries' worst case.
type itemShares struct {
	calls, queries []*subreq.Budget
}

// close gives back what item i+k's shares did not spend.
func (s itemShares) close(k int) {
	s.calls[k].Close()
	s.queries[k].Close()
}

// reserveItems sets aside the worst case of the items [i, end), stopping
// (out of budget) at the first that does not fit: not reached, as the
// lookup batch was sized to the budgets.
func (t *tickRun) reserveItems(i, end int) itemShares {
	s := itemShares{calls: make([]*subreq.Budget, 0, end-i), queries: make([]*subreq.Budget, 0, end-i)}
	for j := i; j < end; j++ {
		share, ok := t.calls.Reserve(t.prog.Spend.ItemCalls)
		qshare, qok := t.queries.Reserve(t.prog.Spend.ItemD1Queries)
		if !ok || !qok {
			if ok {
				share.Close()
			}
			if qok {
				qshare.Close()
			}
			t.outOfBudget = true
			break
		}
		s.calls, s.queries = append(s.calls, share), append(s.queries, qshare)
	}
	return s
}

// reservePages takes, once the chunk from i reaches items past the last
// reservation, one acquire for the pages of every item looked up so far:
// its call is charged to the first such item of the chunk, whose share
// holds its own page acquire's worst case (which the slot then spares it).
func (t *tickRun) reservePages(i, end int, shares itemShares, tripped bool) {
	if t.r.ReservePages == nil || i < t.reservedTo {
		return
	}
	steps := t.prog.Steps
	need := pagesNeeded(steps[i:t.looked], t.items[i:t.looked], t.lookups[i:t.looked], t.slots.denied[i:t.looked], tripped)
	if first := firstNeeding(steps[i:end], t.items[i:end], t.lookups[i:end], t.slots.denied[i:end], tripped); need > 0 && first >= 0 {
		t.pageCtx = t.r.ReservePages(subreq.WithBudget(t.ctx, shares.calls[first]), need)
	}
	t.reservedTo = t.looked
}

// settleChunk settles the items [i, end) at once, each on its own shares,
// and returns the end of those it started: where the program stops on a
// refusal, one that came back while the chunk was under way leaves the
// items not yet started queued, untouched, as they would be after a
// refused chunk.
func (t *tickRun) settleChunk(i, end int, shares itemShares, tripped bool) int {
	var wg sync.WaitGroup
	started := end
	for j := i; j < end; j++ {
		if t.slots.left[j] {
			// Its tier stopped at a refresh left for want of a page: left
			// too, untouched, so the tier's cursor stops before both and
			// nothing goes on the retry list.
			t.results[j] = controller.ItemResult{TrackID: t.items[j].TrackID, Class: controller.ClassOK, Page: controller.PageSkipped, Refresh: true}
			shares.close(j - i)
			continue
		}
		fetchPage := t.prog.Steps[j].MayFetch(tripped) && !t.slots.denied[j]
		var lease *connectionLease // none for an item that sends no page
		// An item whose lookup failed sends no page (enrichOne), so it
		// neither waits for a connection nor stops at a refusal noted by an
		// item of its own failed batch: the batch's fate is all its items'.
		if fetchPage && t.lookups[j].class == controller.ClassOK {
			var ok bool
			if lease, ok = t.gate.enter(); !ok { // wait for a connection to free up
				started = j
				break
			}
		}
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			t.settleItem(j, shares.calls[j-i], shares.queries[j-i], lease, fetchPage)
		}(j)
	}
	wg.Wait()
	for j := started; j < end; j++ {
		shares.close(j - i)
	}
	return started
}

// settleItem settles item j on its shares of the budgets and gives back
// what they and its connection did not use. A panic fails the item as our
// own error: it stays queued.
func (t *tickRun) settleItem(j int, share, qshare *subreq.Budget, lease *connectionLease, fetchPage bool) {
	defer lease.done(false) // if its page did not give it back
	defer share.Close()
	defer qshare.Close()
	defer func() {
		if err := logx.Recovered(recover(), "enrichment item"); err != nil {
			t.results[j] = controller.ItemResult{TrackID: t.items[j].TrackID, Class: controller.ClassStoreError, Error: err.Error()}
		}
	}()
	ictx := withLease(subreq.WithQueries(subreq.WithBudget(t.pageCtx, share), qshare), lease)
	if t.items[j].Refresh != nil {
		t.results[j], t.requests[j] = t.r.settleRefresh(ictx, t.items[j], j, t.lookups[j], fetchPage, t.slots.deferred[j])
	} else {
		t.results[j], t.requests[j] = t.r.settle(ictx, t.items[j], j, t.lookups[j], fetchPage, t.prog.Steps[j].Page == controller.PageProbe)
	}
	if t.results[j].Class == controller.ClassRateLimit {
		t.gate.noteRefused() // a challenge page, say, found only once parsed
	}
}

// outcome ends the run once its items are settled: the tick's pages put,
// the refresh cursors advanced, the enriched apps announced, and what
// became of each attempted item reported with the requests in send order.
func (t *tickRun) outcome() controller.RunOutcome {
	out := controller.RunOutcome{Picked: t.attempted, Skipped: len(t.items) - t.attempted, Results: t.results[:t.attempted]}
	for _, res := range out.Results {
		if res.PageFromR2 {
			out.PagesFromR2++
		}
	}
	out.PagePuts = t.r.putPages(t.ctx, t.tick, t.put)
	out.LimiterCalls = int(t.r.limiterCalls() - t.limiterCalls0)
	if t.refreshes != nil {
		actx := t.ctx
		if t.advance != nil {
			actx = subreq.WithBudget(actx, t.advance)
			defer t.advance.Close()
		}
		if t.advanceQueries != nil {
			actx = subreq.WithQueries(actx, t.advanceQueries)
			defer t.advanceQueries.Close()
		}
		t.r.finishRefreshes(actx, t.refreshes, t.items, out.Results)
	}
	out.Requests = t.requestsInSendOrder()
	out.UnsentEnriched = t.announce(out.Results)
	out.Subrequests = t.calls.Used()
	out.DurationMs = t.r.Now().Sub(t.start).Milliseconds()
	return out
}

// requestsInSendOrder is the run's requests: each batch's lookup before
// the pages of its items (nil when none was sent).
func (t *tickRun) requestsInSendOrder() []controller.RequestOutcome {
	var reqs []controller.RequestOutcome
	for j := range t.items {
		reqs = append(reqs, t.batchReqs[j]...)
		if j < t.attempted {
			reqs = append(reqs, t.requests[j]...)
		}
	}
	return reqs
}

// announce sends the apps enriched (results parsed) on its set-aside
// calls, the outbox's apps first (oldest news), then this run's, and
// returns those not sent: the controller's outbox keeps them.
func (t *tickRun) announce(results []controller.ItemResult) []int64 {
	enriched := append([]int64(nil), t.prog.PendingEnriched...)
	for _, res := range results {
		if res.Class == controller.ClassOK && res.Page == controller.PageParsed {
			enriched = append(enriched, res.TrackID)
		}
	}
	// Under HoldPartial only full messages go; the last partial one's
	// apps wait in the outbox (controller.AnnounceWithin).
	var held []int64
	if t.prog.HoldPartial {
		full := len(enriched) / events.MaxTrackIDs * events.MaxTrackIDs
		enriched, held = enriched[:full], enriched[full:]
	}
	unsent := enriched
	if t.eventsOK {
		unsent = t.r.sendEnriched(subreq.WithBudget(t.ctx, t.events), enriched)
		t.events.Close()
	}
	if len(unsent) > 0 {
		logx.Event("controller.events_deferred", map[string]any{"level": logx.Warn, "apps": len(unsent),
			"action": "kept in the controller's outbox: the next run sends them"})
	}
	return append(unsent, held...)
}

// limiterCalls is the leases' limiter calls so far (0 without a counter).
func (r *Runner) limiterCalls() int64 {
	if r.LimiterCalls == nil {
		return 0
	}
	return r.LimiterCalls()
}

// PagePutAttempts bounds the tick's put of its pages (the controller's
// ItemsPerTick sets its calls aside).
const PagePutAttempts = controller.PagePutCalls

// tickPages is a run's raw pages: the batch every page goes in (nil when
// the run had no room for its put: each page then goes alone), and the
// puts made, the batch's and any page's alone (the controller's totals
// count them: R2 Class A).
type tickPages struct {
	batch *pagebatch.Batch
	puts  atomic.Int64
}

type tickPagesKey struct{}

// storePage adds a fetched page to the tick's batch and returns its
// reference (pagebatch.Ref), valid once the batch is put. A page that
// does not fit the batch, or any page of a run without one, is put alone
// now, on the item's own share of the budget (controller.MaxCallsPerItem
// counts a put).
func (r *Runner) storePage(ctx context.Context, id int64, body []byte, meta PageMeta) (string, error) {
	tp, _ := ctx.Value(tickPagesKey{}).(*tickPages)
	h := pagebatch.Header{TrackID: id, FetchedAt: meta.ScrapedAt, Meta: meta.Map()}
	var key string
	var member []byte
	if tp != nil && tp.batch != nil {
		ref, spill, err := tp.batch.Add(h, body)
		if err != nil {
			return "", err
		}
		if spill == nil {
			return ref.String(), nil
		}
		key, member = pagebatch.SpillKey(tp.batch.Key(), id), spill
	} else {
		m, err := pagebatch.Member(h, body)
		if err != nil {
			return "", err
		}
		key, member = pagebatch.ObjectKey(r.Country, meta.ScrapedAt, id), m
	}
	if tp != nil {
		tp.puts.Add(1)
	}
	if err := r.HTML.PutPages(ctx, key, member, 1); err != nil {
		return "", err
	}
	return pagebatch.Ref{Key: key, Length: int64(len(member))}.String(), nil
}

// putPages puts the tick's batch, once its items are settled: their
// records already name their pages' bytes in it. A put that fails
// PagePutAttempts times loses the tick's pages, never its records (they
// are stored): a reader finds the object missing, as after the bucket's
// lifecycle rule (pagebatch.KeptDays), and an item whose page did not parse stays
// queued, so its page is fetched and kept again. It returns the run's
// puts.
func (r *Runner) putPages(ctx context.Context, tp *tickPages, share *subreq.Budget) int {
	if share != nil {
		defer share.Close()
	}
	if tp.batch == nil || tp.batch.Pages() == 0 {
		return int(tp.puts.Load())
	}
	pctx := subreq.WithBudget(ctx, share)
	var err error
	for range PagePutAttempts {
		tp.puts.Add(1)
		if err = r.HTML.PutPages(pctx, tp.batch.Key(), tp.batch.Bytes(), tp.batch.Pages()); err == nil {
			break
		}
	}
	if err != nil {
		logx.Err("controller.pages_put_failed", err, map[string]any{"key": tp.batch.Key(), "pages": tp.batch.Pages(),
			"bytes": len(tp.batch.Bytes()), "track_ids": tp.batch.TrackIDs(), "action": "records kept; the pages read as missing"})
	}
	return int(tp.puts.Load())
}

// needsPage says whether item j (its step s) will fetch its store page,
// its lookup in hand: settle's own rule. A step whose program lets it
// fetch does when its lookup found it; a refresh only when its lookup
// shows a change its page carries (DueRefresh.NeedsPage).
func needsPage(s controller.Step, it QueuedItem, lookup lookupOutcome, tripped bool) bool {
	if !s.MayFetch(tripped) || lookup.class != controller.ClassOK {
		return false
	}
	return it.Refresh == nil || it.Refresh.NeedsPage(lookup.app)
}

// pagesNeeded is how many of items (their steps steps) will fetch a page,
// those denied a page slot left out: what one reservation asks the store
// host's limit for.
func pagesNeeded(steps []controller.Step, items []QueuedItem, lookups []lookupOutcome, denied []bool, tripped bool) int {
	n := 0
	for k := range items {
		if !denied[k] && needsPage(steps[k], items[k], lookups[k], tripped) {
			n++
		}
	}
	return n
}

// firstNeeding is the index in items of the first that will fetch a page
// (-1: none).
func firstNeeding(steps []controller.Step, items []QueuedItem, lookups []lookupOutcome, denied []bool, tripped bool) int {
	for k := range items {
		if !denied[k] && needsPage(steps[k], items[k], lookups[k], tripped) {
			return k
		}
	}
	return -1
}

// pageSlots is a run's store pages: the store host's pace for the tick
// (the program's Pages), given in item order as the items' lookups come
// back. A new app always has its slot (ShareTick keeps the new apps
// within the pace); a refresh whose lookup shows a change takes one when
// one is left and, while new apps wait, the refreshes' cap
// (RefreshPageCap) is not reached. A refresh denied one while new apps
// wait (backlog: refresh.DeferPage) has its page deferred: its lookup recorded, the app
// on the retry list, its tier's round going on past it. Otherwise it is
// left in its tier's window (fateLeft: its tier's cursor stops before it,
// nothing written), and so is every later refresh of its tier in the run
// (left: not settled), so that no refresh after it is looked at and the
// cursor is not held behind a gap (RefreshAdvance would put the left one
// on the retry list: a row). The retry list's own refreshes stay on it.
type pageSlots struct {
	free int
	// refreshCap bounds the pages refreshes take (NoRefreshPageCap: none,
	// no new app waits); refreshPages counts them.
	refreshCap, refreshPages int
	denied                   []bool // item j fetches no page for want of a slot (left and deferred ones too)
	left                     []bool // item j is a refresh of a tier stopped before it: not settled
	deferred                 []bool // item j is a changed refresh whose page waits for the new apps
	halted                   map[string]bool
}

func newPageSlots(pace, n, refreshCap int) *pageSlots {
	return &pageSlots{free: max(pace, 0), refreshCap: refreshCap, denied: make([]bool, n), left: make([]bool, n),
		deferred: make([]bool, n), halted: map[string]bool{}}
}

// chunkEnd is the end of the chunk from item i (items up to looked have
// their lookups and slots): at most chunk items as before (new apps,
// whatever became of their lookups, and refreshes that fetch a page), and
// up to the program's RideAlong refreshes whose lookup answered and that
// fetch no page.
func (s *pageSlots) chunkEnd(prog controller.Program, items []QueuedItem, lookups []lookupOutcome, i, looked, chunk int, tripped bool) int {
	paced, riding := 0, 0
	j := i
	for ; j < looked; j++ {
		pageless := items[j].Refresh != nil && lookups[j].class == controller.ClassOK &&
			(s.denied[j] || s.left[j] || !needsPage(prog.Steps[j], items[j], lookups[j], tripped))
		if pageless {
			if riding == prog.Chunking.RideAlong {
				break
			}
			riding++
			continue
		}
		if paced == chunk {
			break
		}
		paced++
	}
	return j
}

// allot gives items (the run's from from), their lookups in hand, their
// page slots.
func (s *pageSlots) allot(items []QueuedItem, lookups []lookupOutcome, from int) {
	for k, it := range items {
		j := from + k
		d := it.Refresh
		if d != nil && d.Tier != "" && s.halted[d.Tier] {
			s.left[j], s.denied[j] = true, true // no page: not settled at all
			continue
		}
		if lookups[k].class != controller.ClassOK || (d != nil && !d.NeedsPage(lookups[k].app)) {
			continue // no page: not found, a failed batch, or an unchanged refresh
		}
		switch {
		case d == nil:
			s.free = max(s.free-1, 0)
		case s.free > 0 && (s.refreshCap == NoRefreshPageCap || s.refreshPages < s.refreshCap):
			s.free--
			s.refreshPages++
		case refresh.DeferPage(s.refreshCap != NoRefreshPageCap):
			s.denied[j], s.deferred[j] = true, true
		default:
			s.denied[j] = true
			if d.Tier != "" {
				s.halted[d.Tier] = true
			}
		}
	}
}

// eventMessages is how many app-enriched messages n apps take.
func eventMessages(n int) int { return (n + events.MaxTrackIDs - 1) / events.MaxTrackIDs }

// sendEnriched announces apps, one message (events.MaxTrackIDs apps) a
// call, and returns the apps whose message was not sent: a failed send
// (the queue, or the run's subrequest budget) stops there and the rest
// wait in the controller's outbox, so the markets stage hears of every
// enriched app, never lost to one bad moment.
func (r *Runner) sendEnriched(ctx context.Context, ids []int64) (unsent []int64) {
	if r.Events == nil || len(ids) == 0 {
		return nil
	}
	for i := 0; i < len(ids); i += events.MaxTrackIDs {
		chunk := ids[i:min(i+events.MaxTrackIDs, len(ids))]
		if err := r.Events.AppsEnriched(ctx, chunk); err != nil {
			logx.Event("controller.event_send_failed", map[string]any{"level": logx.Warn, "error": err.Error(), "unsent": len(ids) - i})
			return append([]int64(nil), ids[i:]...)
		}
	}
	return nil
}

func anyRefused(rs []controller.ItemResult) bool {
	for _, r := range rs {
		if r.Class == controller.ClassRateLimit {
			return true
		}
	}
	return false
}

// withRefreshes shares the tick's slots between the queue's items and due
// refreshes (refresh.Split): never-enriched apps first, refreshes after
// them; while any new app waits (backlog) a changed refresh past the
// refreshes' page slots has its page deferred (pageSlots). No refresh runs while store pages are paused (parser drift) or
// lookups are (the API host held): a refresh needs its lookup, and its
// page when the app changed. A failed read of the due refreshes leaves the
// tick to the queue. The pick returned says what the run took, for
// finishRefreshes (nil: no refresh).
func (r *Runner) withRefreshes(ctx context.Context, items []QueuedItem, spec controller.PickSpec, now time.Time) ([]QueuedItem, *refreshRun) {
	if r.Refreshes == nil || spec.Refreshes <= 0 {
		return items, nil
	}
	n := spec.Refreshes
	pick, err := r.Refreshes.DueRefreshes(ctx, n, now)
	if err != nil {
		logx.Err("controller.refresh_pick_failed", err, nil)
		return items, nil
	}
	// The number due is what the pick read: each tier's window and the
	// retry list, up to the tick's items each, so bounded however far
	// behind. The refreshes take what the lookups carry beyond the new
	// apps' share of the pages (ShareTick).
	refreshes, discovery := ShareTick(spec.Pages, n, len(items), len(pick.Items), r.RefreshShare, spec.TickSeq)
	pageCap := RefreshPageCap(spec.Pages, discovery, len(items) > 0)
	items = items[:discovery]
	run := &refreshRun{pick: pick, taken: pick.Items[:refreshes], now: now, pageCap: pageCap}
	for i := range run.taken {
		items = append(items, QueuedItem{TrackID: run.taken[i].TrackID, Refresh: &run.taken[i]})
	}
	if refreshes == 0 && len(pick.Started) == 0 {
		return items, nil
	}
	// A tier without a stored cursor has its start written even when
	// nothing of it is due yet: else each tick would start it again at
	// the clock, and nothing would ever come due.
	return items, run
}

// refreshRun is a run's share of the due refreshes: the pick, and the
// apps taken (a prefix of the pick, so of each tier's window).
type refreshRun struct {
	pick  RefreshPick
	taken []DueRefresh
	now   time.Time
	// pageCap bounds the run's refresh pages while never-enriched apps
	// wait (RefreshPageCap; NoRefreshPageCap: none waits).
	pageCap int
}

// refreshFate is what became of a taken refresh, for its tier's cursor.
type refreshFate int

const (
	fateDone   refreshFate = iota // looked at (stored, unchanged, or on the retry list for the app's own failure)
	fateOutage                    // the upstream failed (5xx, timeout): not looked at
	fateLeft                      // not attempted, refused by the pace, or its page skipped: not looked at
)

func fateOf(res controller.ItemResult) refreshFate {
	switch res.Class {
	case controller.ClassOK:
		if res.Page == controller.PageSkipped {
			return fateLeft
		}
		return fateDone
	case controller.ClassRateLimit:
		return fateLeft
	case controller.ClassServerError, controller.ClassTimeout:
		return fateOutage
	}
	return fateDone
}

// RefreshAdvance is what a run's refreshes move: each tier's cursor to its
// last app looked at, and the apps before it that were not looked at onto
// the retry list (an app after it stays in the window: the next run takes
// it again). So an outage that ends a batch writes nothing and loses
// nothing; an app alone in failing goes on the retry list, never holding
// its tier back. fates are the taken apps' in pick order.
func RefreshAdvance(pick RefreshPick, taken []DueRefresh, fates []refreshFate, now time.Time) (map[string]refresh.Cursor, []RefreshRetry) {
	cursors := map[string]refresh.Cursor{}
	var retries []RefreshRetry
	for _, tier := range refresh.Tiers {
		w := pick.Windows[tier]
		var idx []int // taken apps of the tier, in round order
		for i, d := range taken {
			if d.Tier == tier {
				idx = append(idx, i)
			}
		}
		read := pick.Read[tier]
		if len(idx) == 0 {
			// None read: the window is empty to its end. The cursor is
			// written only to cross into the current round (an empty window
			// of the same round stays where it is: the next read is the
			// same empty range, and no row is written).
			switch {
			case read == 0 && !w.Empty() && w.Round < w.NowRound:
				cursors[tier] = w.After(refresh.Pos{}, true)
			case pick.Started[tier]:
				cursors[tier] = refresh.Cursor{Round: w.Round, Pos: w.From} // kept from now on
			}
			continue
		}
		last := -1
		for k, i := range idx {
			if fates[i] == fateDone {
				last = k
			}
		}
		if last < 0 {
			if pick.Started[tier] {
				cursors[tier] = refresh.Cursor{Round: w.Round, Pos: w.From}
			}
			continue // nothing looked at: the cursor stays
		}
		for _, i := range idx[:last] {
			switch fates[i] {
			case fateOutage:
				retries = append(retries, RefreshRetry{TrackID: taken[i].TrackID, At: ts(now.Add(RefreshOutageDelay))})
			case fateLeft:
				retries = append(retries, RefreshRetry{TrackID: taken[i].TrackID, At: ts(now)})
			}
		}
		d := taken[idx[last]]
		exhausted := last == len(idx)-1 && len(idx) == read && read < pick.Limit
		cursors[tier] = w.After(refresh.Pos{Slot: d.Slot, TrackID: d.TrackID}, exhausted)
	}
	return cursors, retries
}

// finishRefreshes moves the tiers' cursors past what the run looked at
// (RefreshAdvance): one row per tier, one batch. results are the attempted
// items' (items[:len(results)]). A failed write leaves the cursors where
// they were: the apps are looked at again, never skipped.
func (r *Runner) finishRefreshes(ctx context.Context, run *refreshRun, items []QueuedItem, results []controller.ItemResult) {
	if run == nil {
		return
	}
	byID := make(map[int64]controller.ItemResult, len(run.taken))
	for j, res := range results {
		if items[j].Refresh != nil {
			byID[items[j].TrackID] = res
		}
	}
	fates := make([]refreshFate, len(run.taken))
	for i, d := range run.taken {
		res, ok := byID[d.TrackID]
		switch {
		case !ok:
			fates[i] = fateLeft
		case d.Tier == "":
			fates[i] = fateDone // the retry list's own: settleRefresh settled it
		default:
			fates[i] = fateOf(res)
		}
	}
	cursors, retries := RefreshAdvance(run.pick, run.taken, fates, run.now)
	if len(cursors)+len(retries) == 0 {
		return
	}
	if err := r.Refreshes.AdvanceRefreshes(ctx, cursors, retries, r.Now()); err != nil {
		logx.Err("controller.refresh_advance_failed", err, map[string]any{"cursors": len(cursors), "retries": len(retries)})
	}
}

// settleRefresh performs a due refresh: an unchanged app is recorded from
// its lookup alone (nothing written unless a lookup field moved); a
// changed one gets its page and a new record. A failure about the app
// itself puts it on the retry list (refresh.RetryInterval); an outage or a
// refusal leaves a round's app to finishRefreshes (its tier's cursor
// stops before it) and puts a retry-list app back by RefreshOutageDelay.
// Never requeued or given up: the app stays enriched as it was.
func (r *Runner) settleRefresh(ctx context.Context, it QueuedItem, index int, lookup lookupOutcome, fetchPage, deferPage bool) (controller.ItemResult, []controller.RequestOutcome) {
	var res controller.ItemResult
	var reqs []controller.RequestOutcome
	if lookup.class == controller.ClassOK && !it.Refresh.NeedsPage(lookup.app) {
		pageBack(ctx, false) // no page to send: the save need not hold a connection
		res = controller.ItemResult{TrackID: it.TrackID, Class: controller.ClassOK, Status: lookup.status, Unchanged: true}
		if err := r.Refreshes.SaveUnchangedRefresh(ctx, lookup.app, r.Now()); err != nil {
			res.Class, res.Error = controller.ClassStoreError, "d1 save refresh: "+err.Error()
		}
	} else if lookup.class == controller.ClassOK && !fetchPage && deferPage {
		// New apps wait and the refreshes' page slots are taken: what the
		// lookup carries is recorded, the page stays owed (the retry list).
		pageBack(ctx, false)
		now := r.Now()
		res = controller.ItemResult{TrackID: it.TrackID, Class: controller.ClassOK, Status: lookup.status, PageDeferred: true}
		wait := refresh.PageDeferralFor(it.Refresh.Tier == "")
		if err := r.Refreshes.SaveDeferredRefresh(ctx, lookup.app, now, now.Add(wait)); err != nil {
			res.Class, res.Error = controller.ClassStoreError, "d1 save deferred refresh: "+err.Error()
		}
	} else if lookup.class == controller.ClassOK && !fetchPage {
		// The run turned pages off (a streak that did not parse): the app
		// stays due, untouched, and its lookup is not written over a record.
		pageBack(ctx, false)
		res = controller.ItemResult{TrackID: it.TrackID, Class: controller.ClassOK, Status: lookup.status, Page: controller.PageSkipped}
	} else {
		res, reqs, _ = r.enrichOne(ctx, it.TrackID, index, lookup, true, true, "")
	}
	res.Refresh = true
	var delay time.Duration
	switch fateOf(res) {
	case fateDone:
		if res.Class != controller.ClassOK {
			delay = refresh.RetryInterval // the app's own failure
		}
	case fateOutage:
		if it.Refresh.Tier == "" {
			delay = RefreshOutageDelay
		}
	}
	if delay > 0 {
		if err := r.Refreshes.PostponeRefresh(ctx, it.TrackID, r.Now().Add(delay)); err != nil {
			logx.Err("controller.settle_failed", err, map[string]any{"track_id": it.TrackID, "action": "postpone_refresh"})
		}
	}
	if res.Class != controller.ClassOK && !res.BatchFailed {
		logx.Event("controller.refresh_failed", map[string]any{"level": logx.Warn, "track_id": it.TrackID,
			"class": string(res.Class), "status": res.Status, "postponed_s": int64(delay / time.Second), "error": res.Error})
	}
	return res, reqs
}

// lookupOutcome is what an item's lookup batch said about it.
type lookupOutcome struct {
	app         appstore.App
	class       controller.Class // ClassOK: app is the item's
	status      int
	retryAfterS int
	err         string
	// batchFailed: the batch failed as a whole; class is BatchItemClass.
	batchFailed bool
	// stored: the app's fresh stored lookup, no request made, from lookupAt.
	stored   bool
	lookupAt time.Time
}

// lookupBatch looks up items in one request (one unit of the global limit)
// and says what the answer means for each. A batch that fails as a whole
// (refused, 5xx, timeout, an answer that cannot be used) is the fate of all
// its items, and one request, reported once under its first item (first,
// the index of items[0] in the run). req is nil when nothing was sent.
func (r *Runner) lookupBatch(ctx context.Context, items []QueuedItem, first int) (outs []lookupOutcome, req *controller.RequestOutcome) {
	ids := make([]int64, 0, len(items))
	seen := make(map[int64]bool, len(items))
	for _, it := range items {
		if !seen[it.TrackID] { // an id asked twice is sent once
			seen[it.TrackID] = true
			ids = append(ids, it.TrackID)
		}
	}
	outs = make([]lookupOutcome, len(items))
	failAll := func(o lookupOutcome) []lookupOutcome {
		o.batchFailed = true
		for i := range outs {
			outs[i] = o
		}
		logx.Event("controller.lookup_batch_failed", map[string]any{"level": logx.Warn,
			"items": len(items), "ids": len(ids), "first_track_id": ids[0], "class": string(o.class), "status": o.status, "error": o.err})
		return outs
	}
	var resp upstream.Response
	fetch := func(ctx context.Context) error {
		defer func() {
			if err := logx.Recovered(recover(), "lookup fetch"); err != nil {
				resp = upstream.Response{Class: controller.ClassTimeout, Remaining: -1, Err: err}
			}
		}()
		resp = r.Upstream.Get(ctx, r.LookupURL(ids))
		return nil
	}
	if r.Limit == nil {
		fetch(ctx)
	} else if err := r.Limit(ctx, 1, fetch); err != nil {
		// Nothing reached the upstream. Our own global cap is a rate signal
		// for the pacing algorithm; a limiter we cannot reach is our failure.
		o := lookupOutcome{class: controller.ClassStoreError, err: "rate limiter: " + err.Error()}
		if errors.Is(err, ErrLimited) {
			now := r.Now()
			o.class = controller.ClassRateLimit
			req = &controller.RequestOutcome{Item: first, SentAt: now.UnixMilli(), DoneAt: now.UnixMilli(), Class: controller.ClassRateLimit, Remaining: -1,
				Kind: controller.RequestLookup, Local: true}
		}
		return failAll(o), req
	}
	// Parsed into apps at once: the body's room goes back to the run's budget.
	defer resp.Release()
	rq := requestOutcome(first, resp)
	rq.Kind = controller.RequestLookup
	req = &rq
	if resp.Class != controller.ClassOK {
		return failAll(lookupOutcome{class: controller.BatchItemClass(resp.Class), status: resp.Status, retryAfterS: resp.RetryAfterS,
			err: "lookup batch: " + errText(resp.Err)}), req
	}
	batch, err := appstore.ParseLookupBatch(resp.Body, ids)
	if err != nil {
		// A body that does not decode says nothing about any one app: the
		// whole batch waits (BatchItemClass), never counted against an item.
		rq.Class = controller.ClassParseError
		return failAll(lookupOutcome{class: controller.BatchItemClass(controller.ClassParseError), status: resp.Status,
			err: "lookup batch: " + err.Error()}), req
	}
	if len(batch.Unasked)+len(batch.Repeated)+batch.Unreadable > 0 {
		logx.Event("controller.lookup_unmatched", map[string]any{"level": logx.Warn, "ids": len(ids),
			"unasked": batch.Unasked, "repeated": batch.Repeated, "unreadable": batch.Unreadable})
	}
	for i, it := range items {
		app, err := batch.Lookup(it.TrackID)
		outs[i] = lookupOutcome{app: app, class: controller.ClassOK, status: resp.Status}
		if err != nil {
			outs[i].class, outs[i].err = lookupErrClass(err), "lookup: "+err.Error()
		}
	}
	return outs, req
}

// settle enriches one item and applies the controller's verdict to it.
func (r *Runner) settle(ctx context.Context, it QueuedItem, index int, lookup lookupOutcome, fetchPage, probing bool) (controller.ItemResult, []controller.RequestOutcome) {
	if it.Refresh != nil {
		return r.settleRefresh(ctx, it, index, lookup, fetchPage, false)
	}
	reuse := ""
	if fetchPage && !probing && r.Stored != nil && ReuseCandidate(it.HTMLKey, it.PageStatus, it.PriorParseError, r.Now(), r.PageReuse) {
		reuse = it.HTMLKey // a probe asks the live markup: never reused
	}
	res, reqs, kept := r.enrichOne(ctx, it.TrackID, index, lookup, fetchPage, false, reuse)
	res.Probe = fetchPage && probing
	res.PriorParseError = it.PriorParseError
	action := controller.ActionFor(res, it.Attempts)
	var err error
	switch action {
	case controller.ActionMissing:
		err = r.Store.MarkMissing(ctx, it.TrackID, r.Now())
	case controller.ActionRequeue:
		err = r.Store.Requeue(ctx, it.TrackID, it.Attempts+1, res.Class, res.Error, kept)
	case controller.ActionDefer:
		now := r.Now()
		err = r.Store.Defer(ctx, it.TrackID, it.Defers+1, res.Class, res.Error, now.Add(controller.DeferBackoff(it.Defers+1)))
		res.Deferred = err == nil
	case controller.ActionGiveUp:
		err = r.Store.GiveUp(ctx, it.TrackID, it.Attempts+1, res.Class, res.Error, kept, r.Now())
		res.GaveUp = err == nil
	}
	if err != nil {
		// The item stays queued as it was: it will be picked again, never lost.
		logx.Err("controller.settle_failed", err, map[string]any{"track_id": it.TrackID, "action": string(action)})
	}
	// A failed batch is one event (controller.lookup_batch_failed), not one per item.
	if (res.Class != controller.ClassOK || res.Page == controller.PageUnparsed) && !res.BatchFailed {
		logx.Event("controller.item_failed", map[string]any{
			"level": logx.Warn, "track_id": it.TrackID, "class": string(res.Class),
			"status": res.Status, "action": string(action), "error": res.Error,
		})
	}
	return res, reqs
}

// requestOutcome records one upstream call for the pacing algorithm.
func requestOutcome(item int, u upstream.Response) controller.RequestOutcome {
	return controller.RequestOutcome{
		Item: item, SentAt: u.SentAt.UnixMilli(), DoneAt: u.DoneAt.UnixMilli(), Class: u.Class,
		RetryAfterMs: int64(u.RetryAfterS) * 1000, Remaining: u.Remaining, ResetMs: u.Reset.Milliseconds(),
		AskedHoldMs: u.HoldHint.Milliseconds(),
	}
}

// enrichOne fetches the item's store page, its lookup in hand, and stores
// what it can; an item its batch did not find (or found unreadable) needs
// no page. refresh: the item is an enriched app's due refresh. reuse, when
// not "", is the item's stored page to parse instead of a fetch
// (ReuseCandidate); one that cannot be reused is fetched. kept is a page
// parsed but not saved (its save failed): the item's failure records it.
func (r *Runner) enrichOne(ctx context.Context, id int64, index int, lookup lookupOutcome, fetchPage, refresh bool, reuse string) (controller.ItemResult, []controller.RequestOutcome, string) {
	if lookup.class != controller.ClassOK || !fetchPage {
		pageBack(ctx, false) // no page to send: what follows need not hold a connection
	}
	if lookup.class != controller.ClassOK {
		res := controller.ItemResult{TrackID: id, Class: lookup.class, Status: lookup.status, RetryAfterS: lookup.retryAfterS,
			Error: lookup.err, BatchFailed: lookup.batchFailed}
		if !fetchPage {
			res.Page = controller.PageSkipped
		}
		return res, nil, ""
	}
	if !fetchPage {
		return r.lookupOnly(ctx, lookup), nil, ""
	}
	if reuse != "" {
		// The R2 read holds the item's connection like a fetch would.
		sp, ok := r.storedPage(ctx, id, reuse)
		if ok {
			pageBack(ctx, false)
			res := controller.ItemResult{TrackID: id, Class: controller.ClassOK, Status: lookup.status, Page: controller.PageParsed,
				StoredLookup: lookup.stored, PageFromR2: true}
			return r.saveParsed(ctx, res, lookup, sp, reuse, refresh, r.Now()), nil, ""
		}
	}
	var page upstream.Response
	// Parsed, stored and saved by the time this returns: the body's room
	// goes back to the run's budget.
	defer func() { page.Release() }()
	limited := false // refused by our own global limit: never sent
	fetch := func(ctx context.Context) error {
		defer func() {
			if err := logx.Recovered(recover(), "page fetch"); err != nil {
				page = upstream.Response{Class: controller.ClassTimeout, Remaining: -1, Err: err}
			}
		}()
		page = r.Upstream.Get(ctx, r.PageURL(id))
		return nil
	}
	limit := r.Limit
	if r.PageLimit != nil {
		limit = r.PageLimit
	}
	if limit == nil {
		fetch(ctx)
	} else if err := limit(ctx, controller.SubrequestsPerItem, fetch); err != nil {
		// Nothing reached the upstream. A limiter we cannot reach is our
		// failure; our own global cap is a rate signal for the pacing
		// algorithm, and the page waits like a refused one (its lookup kept).
		if !errors.Is(err, ErrLimited) {
			return controller.ItemResult{TrackID: id, Class: controller.ClassStoreError, Error: "rate limiter: " + err.Error()}, nil, ""
		}
		now := r.Now()
		page = upstream.Response{Class: controller.ClassRateLimit, Remaining: -1, Err: fmt.Errorf("rate limiter: %w", err), SentAt: now, DoneAt: now}
		limited = true
	}
	pageBack(ctx, page.Class == controller.ClassRateLimit) // before it is parsed and saved
	res, pageClass, kept := r.itemResult(ctx, id, lookup, page, refresh)
	res.StoredLookup = lookup.stored
	// A challenge page answered 200 but refused us: the pacing algorithm
	// must see it as the refusal it is.
	pageReq := requestOutcome(index, page)
	pageReq.Class, pageReq.Kind, pageReq.Local = pageClass, controller.RequestPage, limited
	return res, []controller.RequestOutcome{pageReq}, kept
}

// lookupOnly handles an item whose page is not fetched (parser drift):
// its lookup is kept and the item waits for its page.
func (r *Runner) lookupOnly(ctx context.Context, lookup lookupOutcome) controller.ItemResult {
	res := controller.ItemResult{TrackID: lookup.app.TrackID, Class: controller.ClassOK, Status: lookup.status, Page: controller.PageSkipped}
	if err := r.Store.SaveLookup(ctx, lookup.app, "", PagePending, r.Now()); err != nil {
		res.Class, res.Error = controller.ClassStoreError, "d1 save lookup: "+err.Error()
		return res
	}
	res.LookupSaved = true
	return res
}

func lookupErrClass(err error) controller.Class {
	if errors.Is(err, appstore.ErrNotFound) {
		return controller.ClassNotFound
	}
	return controller.ClassParseError
}

// itemResult turns the item's page, its lookup in hand, into its outcome,
// storing what can be stored: the full record when the page parsed, else
// the lookup alone. Every page that came back is kept in the tick's R2
// batch with its metadata, parsed or not: unparsed pages are exactly what
// a reparse needs. It also returns the page request's class as the pacing algorithm
// should see it, and the page's reference when it parsed but its save
// failed (kept).
func (r *Runner) itemResult(ctx context.Context, id int64, lookup lookupOutcome, page upstream.Response, refresh bool) (controller.ItemResult, controller.Class, string) {
	now := r.Now()
	app := lookup.app
	pageClass := page.Class
	var sp appstore.StorePage
	var perr error
	key, outcome := "", "" // outcome stays "" when no page came back
	if page.Class == controller.ClassOK {
		sp, perr = appstore.ParseStorePage(page.Body)
		switch outcome = controller.PageParsed; {
		case errors.Is(perr, appstore.ErrSoftBlock):
			outcome, pageClass = controller.PageSoftBlock, controller.ClassRateLimit
		case perr != nil:
			outcome = controller.PageUnparsed
		}
		meta := PageMeta{ScrapedAt: now, Status: page.Status, Format: sp.Format, Outcome: outcome, ParserVersion: appstore.ParserVersion}
		var err error
		if key, err = r.storePage(ctx, id, page.Body, meta); err != nil {
			res := controller.ItemResult{TrackID: id, Class: controller.ClassStoreError, Error: "r2 put: " + err.Error()}
			return res, pageClass, ""
		}
	}

	res := controller.ItemResult{TrackID: id, Class: pageClass, Status: page.Status, RetryAfterS: page.RetryAfterS, Page: outcome}
	if res.Page != controller.PageParsed {
		// The lookup succeeded: keep it, whatever became of the page.
		status := PagePending
		switch res.Page {
		case controller.PageUnparsed:
			status, res.Class, res.Error = PageUnparsedStatus, controller.ClassParseError, "store page: "+perr.Error()
		case controller.PageSoftBlock:
			res.Error = "store page: " + perr.Error() // res.Class is the refusal already
		default:
			res.Error = "store page: " + errText(page.Err)
		}
		at := now
		if lookup.stored {
			// The stored lookup stays as it was, and as old as it was; only
			// a raw page and its status are new.
			at = lookup.lookupAt
		}
		if err := r.Store.SaveLookup(ctx, app, key, status, at); err == nil {
			res.LookupSaved = true
		} else {
			logx.Err("controller.lookup_save_failed", err, map[string]any{"track_id": id})
		}
		return res, pageClass, ""
	}
	res = r.saveParsed(ctx, res, lookup, sp, key, refresh, now)
	kept := ""
	if res.Class == controller.ClassStoreError {
		kept = key
	}
	return res, pageClass, kept
}

// saveParsed saves the record of a parsed page (key, its reference) at
// now, its lookup in hand; a failed save turns res into a store error.
func (r *Runner) saveParsed(ctx context.Context, res controller.ItemResult, lookup lookupOutcome, sp appstore.StorePage, key string, refresh bool, now time.Time) controller.ItemResult {
	rec := Record{App: lookup.app, Page: sp, HTMLKey: key, FetchedAt: now, Refresh: refresh}
	if lookup.stored {
		rec.LookupAt = lookup.lookupAt
	}
	n, err := r.Store.SaveEnriched(ctx, rec)
	if err != nil {
		res.Class, res.Error = controller.ClassStoreError, "d1 save: "+err.Error()
		return res
	}
	res.Discovered = n
	return res
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprint(err)
}
