//go:build unix

package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"storecrawl/durable/controller"
	"storecrawl/worker/crawl"
	"storecrawl/worker/events"
	"storecrawl/worker/pagebatch"
	"storecrawl/worker/refresh"
)

// The scale bench's month as a pure model: the operations measured once,
// the EnrichmentController's cost a tick, and the rates the bench cannot
// measure (Rates). A month is recomputed from them at any pace and any
// rate, so each uncertain rate is also billed at half and twice its value
// (Sensitivity).

// Rates are the month's inputs the bench does not measure on the real
// Worker, or measures on the simulator's catalogue only. Each is named
// with its source in Assumptions.
type Rates struct {
	// ChangesPerAppDay: the share of apps whose values change a day.
	ChangesPerAppDay float64
	// VersionShare: the share of changes that are a new version.
	VersionShare float64
	// PricePerAppDay: price changes an app a day.
	PricePerAppDay float64
	// StoreNewAppsPerDay: the App Store's own growth.
	StoreNewAppsPerDay float64
	// NewKeywordsPerNewApp: keywords new to the steering a new app brings
	// (measured by the bench's probe, on the simulator's vocabulary).
	NewKeywordsPerNewApp float64
	// HintKeywordsPerNewApp: keywords keyword-hints adds a new app in the
	// catalogue, up to its daily bound (HintKeywordsPerDay).
	HintKeywordsPerNewApp float64
	// NewReviewsPerFetch: new reviews a daily fetch of a top app finds.
	NewReviewsPerFetch float64
	// PageBytes: a store page as R2 keeps it (a gzip member).
	PageBytes float64
	// DORequestMs: the time a Durable Object is active for one limiter
	// call or alarm (no outbound I/O: a few SQLite statements).
	DORequestMs float64
}

// Defaults of the rates the bench does not measure.
const (
	// doRequestMs: an assumption, not measured (wrangler dev does not
	// report an object's active time).
	doRequestMs = 5
	// doGB is the memory Durable Object duration bills: 128 MB an object
	// (developers.cloudflare.com/durable-objects/platform/pricing/).
	doGB = 0.128
	// changedRefreshRows is what a refresh that found a change writes
	// beside its history rows (ChangeOps counts those): the record and
	// its index entry. `go test -run TestNewAppRowsWritten -v ./worker/`
	// counts a changed refresh at 4 rows + 1 entry, 2 of the rows the
	// first change's history.
	changedRefreshRows = 3
	// pruneRowsPerRow is what history-prune writes a row it deletes: the
	// history tables are WITHOUT ROWID with no secondary index
	// (TestPruneWritesARowARow counts it on the product's PruneRange).
	pruneRowsPerRow = 1
	// doRowsPerTick is the Durable Object storage rows a controller tick
	// writes (shim/decision_object.mjs, shim/ledger.mjs): its state, its
	// work alarm's key deleted and set, and its facts' row inserted, marked
	// sent, confirmed and deleted, their index entries among them; an
	// estimate from the code, not a measurement, and an upper bound: the
	// ticks of a minute share one fact (durable/controller).
	doRowsPerTick = 8
	// hintKeywordsPerNewApp: the hints find new terms at the design's
	// share of keywords to apps (designKeywords at designApps: 0.091 a new
	// app, the plan crawl/hints.go sizes its bound by), not measured: the
	// simulator's hints at scale answer no new term.
	hintKeywordsPerNewApp = float64(designKeywords) / designApps
)

// HintKeywordsPerDay is the keywords keyword-hints adds a day at pace new
// apps a day: its rate, up to the product's bound
// (crawl.HintNewKeywordsPerDay).
func HintKeywordsPerDay(r Rates, pace float64) float64 {
	return min(r.HintKeywordsPerNewApp*pace, float64(crawl.HintNewKeywordsPerDay))
}

// DefaultRates are the rates the bench bills at; NewKeywordsPerNewApp is
// measured and set by the caller.
func DefaultRates() Rates {
	return Rates{ChangesPerAppDay: appChangesPerAppDay, VersionShare: versionShareOfChanges, PricePerAppDay: priceChangesPerAppDay,
		StoreNewAppsPerDay: storeNewAppsPerDay, HintKeywordsPerNewApp: hintKeywordsPerNewApp, NewReviewsPerFetch: newReviewsPerFetch, PageBytes: realPageBytes(), DORequestMs: doRequestMs}
}

// realPageBytesGlob are the real captured store pages (the simulator's
// are not the store's: the bench's own R2 bytes are printed, not billed).
const realPageBytesGlob = "worker/appstore/testdata/legacy_*.html"

// realPageBytes is a store page as R2 keeps it: the mean member the
// product's own pagebatch.Member makes of the real captured pages
// (`go test -run TestMemberBytesOfRealPages -v ./worker/pagebatch/`).
var realPageBytes = sync.OnceValue(func() float64 {
	dir, err := repoRoot()
	if err != nil {
		panic("real page bytes: " + err.Error())
	}
	files, _ := filepath.Glob(filepath.Join(dir, realPageBytesGlob))
	var total int
	for _, f := range files {
		p, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		m, err := pagebatch.Member(pagebatch.Header{TrackID: 1, FetchedAt: time.Unix(0, 0)}, p)
		if err != nil {
			panic(err)
		}
		total += len(m)
	}
	if len(files) == 0 {
		panic("real page bytes: no page matches " + realPageBytesGlob)
	}
	return float64(total) / float64(len(files))
})

// Assumption is one input the month rests on and where it comes from.
type Assumption struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Source string  `json:"source"`
	// scale is the rate at factor f (nil: a fixed input, not varied).
	scale func(r Rates, f float64) Rates
}

// Assumptions names every input of the month the bench does not measure
// on the real Worker, with its source; the uncertain ones can be scaled.
func Assumptions(r Rates, probeApps int, probeKeywords int64) []Assumption {
	return []Assumption{
		{"catalogue_changes_per_app_day", r.ChangesPerAppDay,
			fmt.Sprintf("assumption: the freshness bench's drift (%d changes an hour on %d apps), not a measurement of the App Store; the scale simulator has no change model (its catalogue holds still above 200,000 apps)", freshChangesPerHour, freshApps),
			func(r Rates, f float64) Rates { r.ChangesPerAppDay *= f; return r }},
		{"version_share_of_changes", r.VersionShare, "assumption: cmd/upstream-sim's drift (one change in three a new version)",
			func(r Rates, f float64) Rates { r.VersionShare = min(1, r.VersionShare*f); return r }},
		{"price_changes_per_app_day", r.PricePerAppDay, "assumption: an app's price moves about once in three years",
			func(r Rates, f float64) Rates { r.PricePerAppDay *= f; return r }},
		{"store_new_apps_per_day", r.StoreNewAppsPerDay, "third-party tallies of the App Store: 988 new apps a day (September 2021), ~34,000 a month (first half of 2022)",
			func(r Rates, f float64) Rates { r.StoreNewAppsPerDay *= f; return r }},
		{"new_keywords_per_new_app", r.NewKeywordsPerNewApp,
			fmt.Sprintf("measured: %d apps marked unfilled brought %d keywords new to the steering through the product's ranking fill, on the simulator's vocabulary (its keywords are whole app names: a real store's share may be lower)", probeApps, probeKeywords),
			func(r Rates, f float64) Rates { r.NewKeywordsPerNewApp *= f; return r }},
		{"hint_keywords_per_new_app", r.HintKeywordsPerNewApp,
			fmt.Sprintf("assumption: keyword-hints finds new terms at the design's share (%d keywords at %d apps), up to its bound of %d a day (crawl.HintNewKeywordsPerDay, which does not follow the catalogue's growth: at the bound all month it adds %d a day); each costs its first search and markets as the probe measured", designKeywords, designApps, crawl.HintNewKeywordsPerDay, crawl.HintNewKeywordsPerDay),
			func(r Rates, f float64) Rates { r.HintKeywordsPerNewApp *= f; return r }},
		{"new_reviews_per_fetch", r.NewReviewsPerFetch, "assumption: a full feed page of new reviews each daily fetch of a top cluster's app (an upper bound)",
			func(r Rates, f float64) Rates { r.NewReviewsPerFetch *= f; return r }},
		{"r2_page_bytes", r.PageBytes, "measured: the mean gzip member pagebatch.Member makes of the real captured store pages (" + realPageBytesGlob + "; the simulator's are not the store's)",
			func(r Rates, f float64) Rates { r.PageBytes *= f; return r }},
		{"do_request_active_ms", r.DORequestMs, "assumption: a limiter call or alarm keeps its object active this long (not measured)",
			func(r Rates, f float64) Rates { r.DORequestMs *= f; return r }},
		{"sitemap_new_index_days", sitemapNewIndexDays, "assumption: the store's new apps' sitemap index lists about a week of new apps (docs/crawl.md; the simulator at scale serves none); it moves only sitemap-scan's rows read (~185,000 a day at 1,100 new apps a day, ±50% at ½× and 2×)", nil},
		{"given_up_apps_share", float64(100-enrichedPct-queuedPct-notFoundPct) / 100, "assumption: the bench catalogue's given-up apps, each failing for good and in its first month of retries (retry-failed's requeues: an upper bound, GiveUpRetriesInMonth)", nil},
		{"r2_pages_kept_days", r2PagesKeptDays, "the bucket's lifecycle rule (pagebatch.KeptDays)", nil},
		{"do_gb", doGB, "Durable Object duration bills 128 MB an object (durable-objects/platform/pricing)", nil},
		{"changed_refresh_rows", changedRefreshRows, "`go test -run TestNewAppRowsWritten -v ./worker/`: a changed refresh 4 rows + 1 entry, 2 of them history", nil},
		{"prune_rows_per_row", pruneRowsPerRow, "TestPruneWritesARowARow: the product's PruneRange, a row written a row deleted", nil},
		{"do_rows_per_tick", doRowsPerTick, "counted from shim/decision_object.mjs and shim/ledger.mjs (state, work alarm key, the tick's fact)", nil},
	}
}

// r2PagesKeptDays is how long R2 keeps a page: the bucket's lifecycle
// rule on "store-pages/" (worker/pagebatch).
const r2PagesKeptDays = pagebatch.KeptDays

// TickCost is the EnrichmentController's cost a tick, measured over the
// enrichment windows: what a tick costs whatever it enriches (its alarm,
// its leases' acquires, its facts message, its R2 put, the queue batch
// its messages make). Billed as ticks a day × the cost of a tick, never
// per new app: the windows ran at another pace than any billed month.
type TickCost struct {
	PerDay        float64 // ticks a day
	LimiterCalls  float64 // lease acquires a tick (durable/limiter requests)
	FactsMessages float64 // facts messages a tick
	// PutsPerPageTick: R2 puts a tick that fetched pages (one a tick's
	// pages, another for a failed put or a page too big for the batch).
	PutsPerPageTick float64
	QueueBatches    float64 // queue consumer batches a tick
	// QueueRowsRead, QueueRowsWritten: the consumer's rows a tick's facts
	// cost (an app-enriched message's are a new app's: EnrichmentSplit).
	QueueRowsRead, QueueRowsWritten float64
	DurationMs                      float64 // a tick's mean wall time (the controller active)
}

// ticksPerDayAtInterval is the controller's nominal ticks a day, used
// when the windows saw no tick.
const ticksPerDayAtInterval = 86400 / 10.0

// TickCostOf is the tick's cost over the windows: every window counts
// (queue messages, facts, acquires), over every window's ticks. Rows of
// the queue consumer are split between a tick's facts and a new app's
// app-enriched message by SplitCosts over the windows' new apps and ticks.
func TickCostOf(ws ...enrichWindow) (tc TickCost, queuePerNew queueSum) {
	var ticks, mins, limiter, facts, batches, puts, pageTicks, ms, samples float64
	for _, w := range ws {
		ticks += w.ticks
		mins += w.mins
		limiter += w.limiterCalls
		q := w.queue()
		facts += q.facts
		batches += q.batches
		if w.pages > 0 {
			puts += w.puts
			pageTicks += w.ticks
		}
		ms += w.tickMs
		samples += w.tickSamples
	}
	tc.PerDay = ticksPerDayAtInterval
	if ticks > 0 && mins > 0 {
		tc.PerDay = ticks / mins * 1440
	}
	per := func(v, n float64) float64 {
		if n <= 0 {
			return 0
		}
		return v / n
	}
	tc.LimiterCalls, tc.FactsMessages, tc.QueueBatches = per(limiter, ticks), per(facts, ticks), per(batches, ticks)
	tc.PutsPerPageTick, tc.DurationMs = per(puts, pageTicks), per(ms, samples)
	if len(ws) == 2 {
		a, b := ws[0], ws[1]
		qa, qb := a.queue(), b.queue()
		if n, t, ok := SplitCosts(a.completed, a.ticks, qa.read, b.completed, b.ticks, qb.read); ok {
			queuePerNew.read, tc.QueueRowsRead = max(0, n), max(0, t)
		}
		if n, t, ok := SplitCosts(a.completed, a.ticks, qa.written, b.completed, b.ticks, qb.written); ok {
			queuePerNew.written, tc.QueueRowsWritten = max(0, n), max(0, t)
		}
		return tc, queuePerNew
	}
	var read, written float64
	for _, w := range ws {
		read += w.queue().read
		written += w.queue().written
	}
	tc.QueueRowsRead, tc.QueueRowsWritten = per(read, ticks), per(written, ticks)
	return tc, queuePerNew
}

// AnnouncedMessagesPerTick is the app-enriched messages a tick sends on
// average when ticks a day enrich enrichedPerDay apps: the controller's
// rule (durable/controller: AnnounceWithin, the run's HoldPartial) played
// over announceSimTicks ticks, a tick's apps Poisson at the pace. A run
// sends full messages (events.MaxTrackIDs apps) and leaves the rest in
// the outbox, unless the outbox's oldest app is AnnounceWithin old: then
// it sends them all.
func AnnouncedMessagesPerTick(enrichedPerDay, ticksPerDay float64) float64 {
	if enrichedPerDay <= 0 || ticksPerDay <= 0 {
		return 0
	}
	tick := 86_400_000 / ticksPerDay // ms
	lambda := enrichedPerDay / ticksPerDay
	rng := rand.New(rand.NewPCG(1, 2))
	held, msgs := 0, 0
	var since float64
	for i := range announceSimTicks {
		now := float64(i) * tick
		hold := held == 0 || now-since < float64(controller.AnnounceWithin.Milliseconds())
		wasEmpty := held == 0
		n := held + poisson(rng, lambda)
		if hold {
			msgs += n / events.MaxTrackIDs
			held = n % events.MaxTrackIDs
		} else {
			msgs += (n + events.MaxTrackIDs - 1) / events.MaxTrackIDs
			held = 0
		}
		if wasEmpty && held > 0 {
			since = now
		}
	}
	return float64(msgs) / announceSimTicks
}

// announceSimTicks is the ticks AnnouncedMessagesPerTick plays (about
// two days at the design's pace).
const announceSimTicks = 20_000

// poisson draws a Poisson count of mean lambda (Knuth's method below 30,
// a rounded normal above).
func poisson(rng *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	if lambda > 30 {
		return max(0, int(math.Round(lambda+math.Sqrt(lambda)*rng.NormFloat64())))
	}
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// TickOps are the controller's ticks in a month with enrichedPerDay apps
// enriched (new apps and changed refreshes: each sends an app-enriched
// id) and pagesPerDay pages fetched: ticks a day × the cost of a tick.
func TickOps(tc TickCost, enrichedPerDay, pagesPerDay float64) []ScaleOp {
	if tc.PerDay <= 0 {
		return nil
	}
	msgs := AnnouncedMessagesPerTick(enrichedPerDay, tc.PerDay)
	pageTicks := 1 - math.Exp(-pagesPerDay/tc.PerDay) // the share of ticks that fetch a page
	tick := ScaleOp{Name: "enrichment: ticks", RunsPerDay: tc.PerDay,
		DORequests:    1 + tc.LimiterCalls, // its alarm (facts sent in the same wake) and its leases' acquires
		QueueMessages: tc.FactsMessages + msgs,
		R2ClassA:      tc.PutsPerPageTick * pageTicks,
		DOActiveMs:    tc.DurationMs, DOStorageRows: doRowsPerTick,
		Note: fmt.Sprintf("a tick: %.2f acquires, %.2f facts + %.2f app-enriched messages, %.2f R2 puts, %.0f ms", tc.LimiterCalls,
			tc.FactsMessages, msgs, tc.PutsPerPageTick*pageTicks, tc.DurationMs)}
	queue := ScaleOp{Name: "queue consumer: ticks", RunsPerDay: tc.PerDay, RowsRead: tc.QueueRowsRead, RowsWritten: tc.QueueRowsWritten,
		Note: fmt.Sprintf("a tick's facts: %.2f consumer batches a tick", tc.QueueBatches)}
	return []ScaleOp{tick, queue}
}

// ChangeInputs is what the catalogue's changes cost besides the history's
// bytes: the refresh tiers that see them and the history rows they write.
type ChangeInputs struct {
	RefreshTiers []TierApps
	Enriched     float64
}

// CatalogueChangesPerDay is the catalogue's changes a day at the rate (an
// assumption: see Assumptions).
func CatalogueChangesPerDay(enriched float64, r Rates) float64 { return enriched * r.ChangesPerAppDay }

// ChangeOps are the writes the catalogue's changes cost, which the bench
// cannot measure (its simulator holds still at scale): a refresh that
// sees a change fetches the page and rewrites the record
// (changedRefreshRows), and each history table's rows (tables: the
// projection's rows a day, ProjectTables) are rows written. seen is the
// changes the refreshes see a day.
func ChangeOps(tables []TableYear, seen, pagePerNewApp float64) []ScaleOp {
	var history float64
	for _, t := range tables {
		if historyModelled[t.Table] {
			history += t.RowsPerDay
		}
	}
	return []ScaleOp{
		{Name: "enrichment: changed refresh", RunsPerDay: seen, RowsWritten: changedRefreshRows, Subrequests: pagePerNewApp,
			Note: "a refresh that sees a change (assumed rate): its page, its record"},
		{Name: "history rows (catalogue changes)", RunsPerDay: history, RowsWritten: 1,
			Note: "rating, version, price and keyword rank rows at the assumed change rate"},
	}
}

// historyModelled are the tables whose rows come from the change model
// (ProjectTables): the bench's own runs do not write them.
var historyModelled = map[string]bool{"app_snapshots": true, "app_version_history": true, "app_price_history": true, "keyword_rank_history": true}

// PruneRowsPerDay is what the pruners delete a day once every pruned
// table holds its retention (the long-run steady state): each deletes a
// day what it adds a day, a row written a row (pruneRowsPerRow).
func PruneRowsPerDay(tables []TableYear) float64 {
	var rows float64
	for _, t := range tables {
		if t.CapDays > 0 {
			rows += t.RowsPerDay * pruneRowsPerRow
		}
	}
	return rows
}

// R2StoredBytes is the pages R2 holds: pagesPerDay kept keptDays.
func R2StoredBytes(pagesPerDay, pageBytes, keptDays float64) float64 {
	return pagesPerDay * keptDays * pageBytes
}

// Model is everything a billed month is computed from.
type Model struct {
	// Ops are the measured operations: a PerNewApp op runs with the new
	// apps, a PerNewKeyword op with the new keywords they bring.
	Ops  []ScaleOp
	Tick TickCost
	// PagesPerNewApp: the pages a new app fetches (SplitCosts).
	PagesPerNewApp float64
	// Storage is the projection's inputs; Rates replace its rates.
	Storage StorageInputs
	// D1BytesNow is D1's size in use at the start; DOBytes the Durable
	// Objects' storage as measured.
	D1BytesNow, DOBytes float64
	// WorkersFixedPerDay: the Worker's own invocations a day besides the
	// ticks' queue batches (crons, the cron phase's batches).
	WorkersFixedPerDay float64
}

// BilledMonth is one month: its usage and bill, the operations billed,
// and the figures the report prints beside them.
type BilledMonth struct {
	Month
	Ops                        []ScaleOp
	Tables                     []TableYear
	Storage                    Storage
	NewAppsPerDay, SeenChanges float64
	PagesPerDay, PruneRows     float64
}

// Month bills the model at pace new apps a day and rates; steady adds
// the pruners' deletes of a catalogue whose pruned tables hold their
// retention.
func (m Model) Month(pace float64, r Rates, steady bool) BilledMonth {
	ops := make([]ScaleOp, 0, len(m.Ops)+6)
	for _, o := range m.Ops {
		switch {
		case o.PerNewKeyword > 0:
			o.RunsPerDay = o.PerNewKeyword * (r.NewKeywordsPerNewApp*pace + HintKeywordsPerDay(r, pace))
		case o.PerNewApp > 0:
			o.RunsPerDay = o.PerNewApp * pace
		}
		ops = append(ops, o)
	}
	in := m.Storage
	in.Rates, in.NewAppsPerDay = r, r.StoreNewAppsPerDay
	tables := ProjectTables(in)
	seen := ChangeRowsPerDay(in.RefreshTiers, r.ChangesPerAppDay)
	ops = append(ops, ChangeOps(tables, seen, m.PagesPerNewApp)...)
	pages := pace*m.PagesPerNewApp + seen
	ops = append(ops, TickOps(m.Tick, pace+seen, pages)...)
	ops = append(ops, DeferralOps((pace-r.StoreNewAppsPerDay)*daysPerMonth, in.Apps, seen, designAppsPerHour*24, refresh.RefreshPageShareWhileBacklog)...)
	var prune float64
	if steady {
		prune = PruneRowsPerDay(tables)
		ops = append(ops, ScaleOp{Name: "history-prune: deletes at retention", RunsPerDay: prune, RowsWritten: 1,
			Note: "every pruned table at its retention deletes a day what it adds"})
	}
	// An object is active for its measured wall time (a tick, a task's
	// run in the scheduler's alarm) and DORequestMs for each request.
	for i, o := range ops {
		ops[i].DOActiveMs = o.DOActiveMs + o.DORequests*r.DORequestMs
	}
	st := StorageOf(m.D1BytesNow, tables)
	st.R2Bytes = R2StoredBytes(pages, r.PageBytes, r2PagesKeptDays)
	st.DOBytes = m.DOBytes
	workers := m.WorkersFixedPerDay + m.Tick.QueueBatches*m.Tick.PerDay
	return BilledMonth{Month: MonthOf(ops, st, workers), Ops: ops, Tables: tables, Storage: st, NewAppsPerDay: pace,
		SeenChanges: seen, PagesPerDay: pages, PruneRows: prune}
}

// TextAfterYear is D1 after a year with app_registry's and
// app_version_history's texts billed at each size.
type TextAfterYear struct {
	Real      float64 `json:"real"`
	Simulated float64 `json:"simulated"`
	Half      float64 `json:"real_half"`
	Double    float64 `json:"real_double"`
}

// TextAfterYear is the month at pace and rates after a year, the texts at
// real sizes, as simulated, and at ½× and 2× the real.
func (m Model) TextAfterYear(pace float64, r Rates) TextAfterYear {
	at := func(t TextSizing) float64 {
		m.Storage.Text = t
		return m.Month(pace, r, false).Storage.AfterYear
	}
	t := m.Storage.Text
	return TextAfterYear{Real: at(t), Simulated: at(t.AsSimulated()), Half: at(t.ScaledReal(0.5)), Double: at(t.ScaledReal(2))}
}

// Sensitivity is the fill month and the steady month at half and twice
// one uncertain rate.
type Sensitivity struct {
	Name   string        `json:"name"`
	Value  float64       `json:"value"`
	Half   SensitivityAt `json:"half"`
	Double SensitivityAt `json:"double"`
}

// SensitivityAt is the two months at one factor.
type SensitivityAt struct {
	FillRowsWritten   float64 `json:"fill_d1_rows_written_month"`
	FillUSD           float64 `json:"fill_overage_usd_month"`
	SteadyRowsWritten float64 `json:"steady_d1_rows_written_month"`
	SteadyUSD         float64 `json:"steady_overage_usd_month"`
}

// SensitivityOf bills the fill month and the steady month (prunes at
// retention) of a catalogue of apps at ½× and 2× each uncertain rate; the
// paces follow the store's new apps (MonthPaces).
func (m Model) SensitivityOf(apps float64, r Rates, as []Assumption) []Sensitivity {
	var out []Sensitivity
	for _, a := range as {
		if a.scale == nil {
			continue
		}
		at := func(f float64) SensitivityAt {
			x := a.scale(r, f)
			fill, steady := m.Month(apps/daysPerMonth+x.StoreNewAppsPerDay, x, false), m.Month(x.StoreNewAppsPerDay, x, true)
			return SensitivityAt{fill.D1RowsWritten, fill.OverageUSD, steady.D1RowsWritten, steady.OverageUSD}
		}
		out = append(out, Sensitivity{Name: a.Name, Value: a.Value, Half: at(0.5), Double: at(2)})
	}
	return out
}

// NewKeywordsPerNewApp is the keywords new to the steering a new app
// brings, as the probe measured it: the keywords the product's ranking
// fill queued for probeApps apps marked unfilled, over those apps.
func NewKeywordsPerNewApp(newKeywords int64, probeApps int) float64 {
	if probeApps <= 0 || newKeywords <= 0 {
		return 0
	}
	return float64(newKeywords) / float64(probeApps)
}

// PerFirstSearch is v, what the probe's cycles cost, per keyword searched
// for the first time: the keywords still unsearched when the probe
// stopped cost what a searched one did.
func PerFirstSearch(v float64, searched int) float64 { return v / float64(max(1, searched)) }

// Deferred pages while a fill's backlog lasts (worker/refresh: DeferPage).
const (
	// deferredFirstRows is what a changed refresh whose page is deferred
	// writes beyond the change itself: the app's row (`go test -run
	// TestDeferredRefreshRecordsTheLookupAndKeepsThePageDue -v
	// ./worker/enrichment/`: 5 rows, the app and four history rows, which
	// ChangeOps bills as the change's); its page, fetched later, is the
	// changed refresh ChangeOps bills.
	deferredFirstRows = 1
	// deferredRetryRows is a deferral due again and deferred again (the
	// same test: 1 row).
	deferredRetryRows = 1
	// backlogStepHours is DeferralOps' time step.
	backlogStepHours = 1.0
)

// DeferralOps are the rows the refreshes' deferred pages write in a month
// whose new apps wait for the page host: fill new apps (the catalogue's
// own, beyond the store's growth) enriched at pagesPerDay × (1 − share)
// a day, so the backlog lasts fill ÷ that many days (at most the month),
// while the enriched catalogue (apps at most) grows with it and its
// changed refreshes (seenFull a day at the whole catalogue) get share ×
// pagesPerDay pages a day. Every other one is deferred: first for
// refresh.PageDeferral, then again each refresh.RepeatPageDeferral until
// the backlog ends (an upper bound: the retry list's apps take the share's
// pages first, so some of them get theirs sooner).
func DeferralOps(fill, apps, seenFull, pagesPerDay, share float64) []ScaleOp {
	newAppPages := pagesPerDay * (1 - share)
	if fill <= 0 || newAppPages <= 0 || apps <= 0 {
		return nil
	}
	backlogH := min(fill/newAppPages, daysPerMonth) * 24
	fullH := apps / newAppPages * 24 // the catalogue enriched once
	first := refresh.PageDeferral.Hours()
	repeat := refresh.RepeatPageDeferral.Hours()
	var deferred, retries float64
	for t := 0.0; t < backlogH; t += backlogStepHours {
		seen := seenFull * min(1, t/fullH) / 24 * backlogStepHours
		d := max(0, seen-share*pagesPerDay/24*backlogStepHours)
		deferred += d
		if left := backlogH - t - first; left > 0 {
			retries += d * (1 + math.Floor(left/repeat))
		}
	}
	note := fmt.Sprintf("a backlog of %.1f days: %.0f changed refreshes deferred, %.0f deferred again (first wait %v, then %v)",
		backlogH/24, deferred, retries, refresh.PageDeferral, refresh.RepeatPageDeferral)
	return []ScaleOp{{Name: "enrichment: deferred pages", RunsPerDay: (deferred + retries) / daysPerMonth,
		RowsWritten: (deferred*deferredFirstRows + retries*deferredRetryRows) / max(1, deferred+retries), Note: note}}
}
