//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"storecrawl/internal/devstack"
	"storecrawl/worker/appstore"
	"storecrawl/worker/catalogue"
	"storecrawl/worker/config"
	"storecrawl/worker/crawl"
	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/markets"
	"storecrawl/worker/refresh"
	"storecrawl/worker/reviews"
	"storecrawl/worker/segments"
	"storecrawl/worker/tasks"
)

// The scale bench (docs/scale.md): a local D1 filled to the design's
// catalogue, the simulator serving the same apps, and the real Worker
// under wrangler dev; each cron and scheduler task fired a few times and
// the EnrichmentController run for a window at the design's pace, each
// one's D1 rows read from D1's result metadata (the cron record, the
// scheduler's last run, the controller's totals, the queue consumer's
// queue.batch lines), multiplied by its runs a day.
const (
	scaleDefaultApps = designApps
	// designAppsPerHour is the design's enrichment pace (1.1M apps in 6 days).
	designAppsPerHour = 7600
	// scaleCrawlCycles is how many crawl cycles are fired; the catalogue
	// has that many cycles' worth of re-searches due.
	scaleCrawlCycles = 6
	scaleTaskRuns    = 2 // runs of each scheduler task
	// scaleRequestTimeout bounds one request to the Worker under test.
	scaleRequestTimeout = 10 * time.Minute
	// fillProbeApps apps are marked unfilled to measure what a new app's
	// keywords cost the crawl, over at most fillProbeCycles cycles.
	fillProbeApps = 200
	// hintProbeKeywords keywords are made new (as keyword-hints adds them)
	// in the same cycles, to measure a new keyword's first search.
	hintProbeKeywords = 50
	fillProbeCycles   = 4
	scaleClusterRuns  = 2
	// queueQuiet: the queue consumer has settled when no batch has come
	// for longer than its batch timeout (wrangler.jsonc max_batch_timeout,
	// 5 s); queueSettleMax bounds the wait.
	queueQuiet     = 6 * time.Second
	queueSettleMax = 60 * time.Second
	// chartsPerRun: charts-refresh writes one KV value a chart.
	chartsPerRun = 3 // collections
	// cronWakes: the crawl cycle's cron wakes the SchedulerDO and the
	// EnrichmentController (a call each), so their alarms are armed.
	cronWakes = 2
	// reconcileObjectReads: ledger-reconcile reads the EnrichmentController's
	// and the SchedulerDO's ledgers too (a call each; the limiter keys' are
	// measured).
	reconcileObjectReads = 2
)

type scaleReport struct {
	Apps               int     `json:"apps"`
	D1RowsReadMonth    float64 `json:"d1_rows_read_month"`
	D1RowsWrittenMonth float64 `json:"d1_rows_written_month"`
	D1BytesNow         float64 `json:"d1_bytes_now"`
	// D1BytesAfterYear bills app_registry's and app_version_history's
	// texts at real sizes (TextSizing); D1TextBytesAfterYear is it as
	// simulated and at ½× and 2× the real sizes.
	D1BytesAfterYear     float64              `json:"d1_bytes_after_year"`
	D1TextBytesAfterYear TextAfterYear        `json:"d1_bytes_after_year_by_text"`
	TextSizes            map[string]TextSizes `json:"text_sizes"`
	D1BytesPerDay        float64              `json:"d1_bytes_per_day"`
	D1Tables             []TableYear          `json:"d1_tables"`
	DORequestsMonth      float64              `json:"do_requests_month"`
	QueueOpsMonth        float64              `json:"queue_ops_month"`
	R2ClassAMonth        float64              `json:"r2_class_a_month"`
	R2ClassBMonth        float64              `json:"r2_class_b_month"`
	KVWritesMonth        float64              `json:"kv_writes_month"`
	WorkersRequestsMon   float64              `json:"workers_requests_month"`
	OverageUSDMonth      float64              `json:"overage_usd_month"`
	OverageByMeter       map[string]any       `json:"overage_by_meter"`
	Operations           []ScaleOp            `json:"operations"`
	Shape                ScaleShape           `json:"shape"`
	PricesDate           string               `json:"prices_date"`
	RefreshesDuePerDay   float64              `json:"refreshes_due_per_day"`
	RefreshesDonePerDay  float64              `json:"refreshes_done_per_day"`
	// Months: the fill (the top-level figures), the steady state after
	// it, and the design's pace all month (scale_month.go).
	Months map[string]MonthSummary `json:"months"`
	// NewKeywordsPerNewApp is measured (the probe, through the product's
	// ranking fill); CatalogueChangesPerDay an assumption (Assumptions).
	NewKeywordsPerNewApp   float64 `json:"new_keywords_per_new_app"`
	CatalogueChangesPerDay float64 `json:"catalogue_changes_per_day"`
	// DOGBsMonth is Durable Object duration in the fill month; R2StorageGB
	// the pages R2 keeps; DOStorageGB the objects' storage (measured).
	DOGBsMonth  float64 `json:"do_gb_s_month"`
	R2StorageGB float64 `json:"r2_storage_gb"`
	DOStorageGB float64 `json:"do_storage_gb"`
	// SteadyMonth is the long-run steady state: new apps at the store's
	// pace, every pruned table at its retention (its deletes billed).
	SteadyMonth SteadySummary `json:"steady_month"`
	Assumptions []Assumption  `json:"assumptions"`
	Sensitivity []Sensitivity `json:"sensitivity"`
}

// benchScale runs the scale bench on n apps and prints the tables (and
// JSON when asJSON: the report alone on stdout, the tables on stderr).
func benchScale(root string, n, windowMin int, asJSON bool) {
	out := os.Stdout
	if asJSON {
		out = os.Stderr
	}
	say := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	n = max(200, n/100*100)
	t0 := time.Now()
	// A Worker that stops answering fails the bench instead of hanging it.
	// At 1.1M apps on a loaded machine the first crawl cycle shares the
	// Worker with the scheduler's first tasks (a dataset snapshot alone
	// took ~3 minutes): scaleRequestTimeout leaves room for that.
	http.DefaultClient.Timeout = scaleRequestTimeout
	persist, _ := os.MkdirTemp("", "bench-scale-")
	defer os.RemoveAll(persist)
	wranglerLocal(root, persist, "d1", "migrations", "apply", "DB", "--local")
	dbPath := localD1File(persist)

	simBase, stopSim := startSimWith(root, n, "-rate-per-min", "60000", "-burst", "2000")
	defer stopSim()
	perCycle := float64(0)
	shape := ShapeOf(n)
	// Re-searches due a cycle at the steering's intervals (scale_catalogue.go's buckets).
	dayS := 86400.0
	perCycle = float64(shape.Keywords) * (hotClusterPct/100.0*dayS/crawl.HotKeywordResearch.Seconds() +
		warmClusterPct/100.0*dayS/crawl.WarmKeywordResearch.Seconds() +
		(100-hotClusterPct-warmClusterPct)/100.0*dayS/crawl.ColdKeywordResearch.Seconds()) / 288
	due := int(math.Ceil(perCycle * scaleCrawlCycles))
	say("\nScale bench: %d apps; local D1 at %s\n", n, dbPath)
	tb := time.Now()
	shape, err := BuildCatalogue(dbPath, simBase, n, time.Now(), due)
	if err != nil {
		fail("scale catalogue: %v", err)
	}
	counts, err := tableCounts(dbPath, "app_registry", "developers", "crawl_keywords", "crawl_rankings", "market_clusters",
		"app_snapshots", "app_version_history", "app_price_history")
	if err != nil {
		fail("counts: %v", err)
	}
	tiers := refreshTiers(dbPath)
	say("catalogue built in %s: %v\n", time.Since(tb).Round(time.Second), sortedCounts(counts))
	say("refresh tiers: %v; re-searches due a cycle %.1f (%d due now for %d cycles)\n", tiers, perCycle, due, scaleCrawlCycles)
	bytesStart := fileBytes(dbPath)
	sizes0 := tableSizes(dbPath)
	sample, simText, err := historyRowBytes(dbPath, max(historySampleMin, int(historySampleShare*float64(shape.Enriched))), time.Now())
	if err != nil {
		fail("history sample: %v", err)
	}

	// Kept for a look after the run; the queue's batches are read from it,
	// so each run has its own (runs on one machine would mix theirs).
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("bench-scale-wrangler-%d.log", os.Getpid()))
	base, stop := startScaleWrangler(root, persist, logPath, simBase)
	defer stop()
	runStart := time.Now()
	control(base, "stop", "") // the crons and tasks are measured alone first

	var ops []ScaleOp
	// Each operation is printed as it is measured, so a run cut short keeps them.
	measured := func(o ScaleOp) {
		say("measured %-24s runs/day %9.1f  rows read %10.0f  rows written %9.1f  subreqs %6.1f  wall ms %7.0f  %s\n",
			o.Name, o.RunsPerDay, o.RowsRead, o.RowsWritten, o.Subrequests, o.WallMs, o.Note)
	}
	simServed := func() int64 { var st struct{ Served int64 }; getJSON(simBase+"/__stats", &st); return st.Served }

	// The 5-minute crawl cycle.
	// Cover days: ranking fill's pass over every enriched app at
	// RankingFillApps a cycle (it fills each app once).
	cyc := ScaleOp{Name: "crawl-cycle (*/5)", RunsPerDay: 288, KVWrites: 1,
		CoverDays: float64(shape.Enriched) / (crawl.RankingFillApps * 288)}
	lim0 := readLimiters(base)
	var actions []string
	var idle ScaleOp
	searched, idled := 0, 0
	qStart := settleQueue(logPath) // the Worker's start's own batches, apart
	for range scaleCrawlCycles {
		r := fireCron(base)
		addRun(&cyc, float64(r.D1.RowsRead), float64(r.D1.RowsWritten), float64(r.Subrequests), float64(r.DurationMs))
		actions = append(actions, fmt.Sprintf("%s %d/%d/%dr%dw", r.Crawl.Action, r.Crawl.Searches, r.Crawl.Apps, r.D1.RowsRead, r.D1.RowsWritten))
		searched += r.Crawl.Searches
		if r.Crawl.Searches == 0 {
			idled++
			addRun(&idle, float64(r.D1.RowsRead), float64(r.D1.RowsWritten), float64(r.Subrequests), float64(r.DurationMs))
		}
	}
	if idled > 0 {
		finishRuns(&idle, idled)
	}
	// A cycle at the steering's steady rate (perCycle re-searches), not
	// the mean of cycles that searched what came due since the catalogue
	// was built (CycleAtDue).
	measuredCycle := cyc
	finishRuns(&measuredCycle, scaleCrawlCycles)
	cyc.RowsRead = CycleAtDue(cyc.RowsRead, idle.RowsRead, scaleCrawlCycles, searched, perCycle)
	cyc.RowsWritten = CycleAtDue(cyc.RowsWritten, idle.RowsWritten, scaleCrawlCycles, searched, perCycle)
	cyc.Subrequests = CycleAtDue(cyc.Subrequests, idle.Subrequests, scaleCrawlCycles, searched, perCycle)
	cyc.WallMs = CycleAtDue(cyc.WallMs, idle.WallMs, scaleCrawlCycles, searched, perCycle)
	// The wakes, and the limiter calls the cycles made (measured: a scan's
	// charts and a task's searches are one reservation each); the limiter's
	// alarms are the "limiter alarms" row.
	cycCalls := LimiterDelta(lim0, readLimiters(base)).Calls
	cyc.DORequests = cronWakes + cycCalls/scaleCrawlCycles
	cyc.Note = fmt.Sprintf("at %.1f searches a cycle; measured %d searches in %d cycles (%d re-searches due at the start), %.0f read, %.0f written a cycle; action searches/apps/rows: %s",
		perCycle, searched, scaleCrawlCycles, due, measuredCycle.RowsRead, measuredCycle.RowsWritten, strings.Join(actions, ", "))
	ops = append(ops, cyc)
	measured(cyc)
	cycleQueue := settleQueue(logPath) // the cycles' events reach the queue consumer
	// The queue consumer's share of a cycle: its batches follow the
	// cycle's searches (rankings-updated and the markets they move), so a
	// cycle at the steady rate is billed as CycleAtDue bills the cycle.
	cycQ := cycleQueue.minus(qStart)
	qcyc := ScaleOp{Name: "queue consumer: crawl cycle", RunsPerDay: 288,
		RowsRead:      CycleAtDue(cycQ.read, 0, scaleCrawlCycles, searched, perCycle),
		RowsWritten:   CycleAtDue(cycQ.written, 0, scaleCrawlCycles, searched, perCycle),
		QueueMessages: max(1, CycleAtDue(cycQ.messages, 0, scaleCrawlCycles, searched, perCycle))}
	qcycBatches := CycleAtDue(cycQ.batches, 0, scaleCrawlCycles, searched, perCycle)
	qcyc.Note = fmt.Sprintf("at %.1f searches a cycle; measured %d searches in %d cycles: %.0f batches, %.0f messages (%.0f of facts), %.0f read, %.0f written",
		perCycle, searched, scaleCrawlCycles, cycQ.batches, cycQ.messages, cycQ.facts, cycQ.read, cycQ.written)

	// A new app's keywords: ranking fill queues an enriched app's title
	// and subtitle words the steering does not know yet, and the cycles
	// after map them (a first search each, its results, their markets).
	// The catalogue starts with every app filled, so the cycles above are
	// the steady state's re-searches; here fillProbeApps apps are marked
	// unfilled (as that many new apps would be) and cycles run until the
	// keywords they brought are searched (at most fillProbeCycles), each
	// cycle's rows and its queue batches charged to those apps.
	fp := ScaleOp{Name: "crawl: a new keyword"}
	kw0, pending0 := countRows(dbPath, "crawl_keywords", ""), countRows(dbPath, "crawl_keywords", "searched_at IS NULL")
	fpLim0 := readLimiters(base)
	wranglerLocal(root, persist, "d1", "execute", "DB", "--local", "--command", fmt.Sprintf(
		"UPDATE app_registry SET rankings_filled_at = NULL WHERE track_id IN (SELECT track_id FROM app_registry WHERE enrichment_source = 'itunes+store' AND rankings_filled_at IS NOT NULL ORDER BY track_id DESC LIMIT %d)", fillProbeApps))
	// And hintProbeKeywords searched keywords made new as keyword-hints
	// adds one (source 'hints', a value, never searched; no rankings, no
	// market): the cycles' first searches of them, and the markets the
	// consumer builds of their results, are what a new keyword costs.
	probeKw := fmt.Sprintf("SELECT keyword FROM crawl_keywords WHERE searched_at IS NOT NULL ORDER BY keyword DESC LIMIT %d", hintProbeKeywords)
	wranglerLocal(root, persist, "d1", "execute", "DB", "--local", "--command", strings.Join([]string{
		"DELETE FROM crawl_rankings WHERE keyword IN (" + probeKw + ")",
		"DELETE FROM market_clusters WHERE cluster_id IN (" + probeKw + ")",
		"DELETE FROM opportunity_scores WHERE cluster_id IN (" + probeKw + ")",
		"UPDATE crawl_keywords SET searched_at = NULL, result_count = NULL, research_interval_s = NULL, next_search_at = NULL, due_value = NULL, source = 'hints', value = 1e6 WHERE keyword IN (" + probeKw + ")",
	}, "; "))
	var fpActions []string
	firstSearches, fpCycles := 0, 0
	for c := 0; c < fillProbeCycles; c++ {
		r := fireCron(base)
		fpCycles++
		addRun(&fp, float64(r.D1.RowsRead), float64(r.D1.RowsWritten), float64(r.Subrequests), float64(r.DurationMs))
		firstSearches += r.Crawl.Searches
		fpActions = append(fpActions, fmt.Sprintf("%s %d/%d/%dr%dw", r.Crawl.Action, r.Crawl.Searches, r.Crawl.Apps, r.D1.RowsRead, r.D1.RowsWritten))
		if c > 0 && countRows(dbPath, "crawl_keywords", "searched_at IS NULL") <= pending0 {
			break
		}
	}
	fpCalls := LimiterDelta(fpLim0, readLimiters(base)).Calls
	fpQueue := settleQueue(logPath)
	newKeywords := countRows(dbPath, "crawl_keywords", "") - kw0
	left := countRows(dbPath, "crawl_keywords", "searched_at IS NULL") - pending0
	// Rows a new keyword costs (its first search, its first markets; the
	// keywords still unsearched charged at the mean a search cost), run
	// for each keyword a new app brings: the share the probe measured,
	// through the product's own ranking fill and keyword steering.
	keywordsPerApp := NewKeywordsPerNewApp(newKeywords, fillProbeApps)
	perKeyword := func(v float64) float64 { return PerFirstSearch(v, firstSearches) }
	fp.PerNewApp, fp.PerNewKeyword = 0, 1
	fp.RowsRead, fp.RowsWritten = perKeyword(fp.RowsRead), perKeyword(fp.RowsWritten)
	fp.Subrequests, fp.WallMs = perKeyword(fp.Subrequests), perKeyword(fp.WallMs)
	fp.DORequests = perKeyword(fpCalls) // the limiter calls of the first searches (measured)
	fp.QueueMessages = perKeyword(fpQueue.messages - cycleQueue.messages)
	fpQ := ScaleOp{Name: "queue consumer: a new keyword", PerNewKeyword: 1,
		RowsRead: perKeyword(fpQueue.read - cycleQueue.read), RowsWritten: perKeyword(fpQueue.written - cycleQueue.written)}
	fp.Note = fmt.Sprintf("per new keyword (ranking fill's, %.3f a new app, measured: %d apps unfilled brought %d; and keyword-hints'): %d first searches (%d hint keywords made new) in %d cycles (%d left, charged at the mean); action searches/apps/rows: %s",
		keywordsPerApp, fillProbeApps, newKeywords, firstSearches, hintProbeKeywords, fpCycles, left, strings.Join(fpActions, ", "))
	ops = append(ops, fp, fpQ)
	measured(fp)
	measured(fpQ)

	cl := ScaleOp{Name: "clustering (0 */6)", RunsPerDay: 4, KVWrites: 1, QueueMessages: 1,
		CoverDays: float64(shape.Keywords) / markets.ClusterBatchKeywords / 4}
	// The queue consumer's batches that the cron's and the tasks' runs
	// cause, each operation's own (its runs' batches, settled, a run)
	// at its runs a day: taskQueue is their day.
	var taskQueue queueSum
	lastQ := fpQueue
	queueOf := func(name string, runs, perDay float64) {
		q := settleQueue(logPath)
		d := q.minus(lastQ)
		lastQ = q
		if runs > 0 {
			taskQueue = taskQueue.plus(d.scaled(perDay / runs))
			if d.batches > 0 {
				say("queue consumer after %-20s %4.0f batches %5.0f messages %7.0f read %6.0f written (%g runs)\n", name, d.batches, d.messages, d.read, d.written, runs)
			}
		}
	}
	for range scaleClusterRuns {
		r := fireCronExpr(base, "0 */6 * * *")
		addRun(&cl, float64(r.D1.RowsRead), float64(r.D1.RowsWritten), float64(r.Subrequests), float64(r.DurationMs))
	}
	queueOf(cl.Name, scaleClusterRuns, cl.RunsPerDay)
	finishRuns(&cl, scaleClusterRuns)
	ops = append(ops, cl)
	measured(cl)

	// The daily run does not pass over the catalogue: it is the
	// data-quality check of a sample (tasks.RunDaily); rating history is
	// incremental (the triggers, and the rating sweep's pass copying what
	// no snapshot holds). KV: its result and the cron record.
	dl := ScaleOp{Name: "daily (0 3)", RunsPerDay: 1, KVWrites: 2,
		Note: fmt.Sprintf("a data-quality sample of at most %d apps; no snapshot pass", tasks.QualityWindows*tasks.QualityWindowApps)}
	r := fireCronExpr(base, "0 3 * * *")
	addRun(&dl, float64(r.D1.RowsRead), float64(r.D1.RowsWritten), float64(r.Subrequests), float64(r.DurationMs))
	queueOf(dl.Name, 1, dl.RunsPerDay)
	ops = append(ops, dl)
	measured(dl)

	// Every scheduler task at its period.
	var st schedStatus
	getJSON(base+"/v1/scheduler/status", &st)
	cover := coverRuns(shape)
	var schedRunsPerDay float64
	for _, t := range st.Tasks {
		op := ScaleOp{Name: t.Name, RunsPerDay: dayS / float64(t.EveryS)}
		if runs, ok := cover[t.Name]; ok {
			op.CoverDays = runs / op.RunsPerDay
		}
		if t.Name == "charts-refresh" {
			op.KVWrites = chartsPerRun * float64(len(tasks.ChartCategories)*len(tasks.ChartCountries))
		}
		l0 := readLimiters(base)
		// The scheduler's own run at the Worker's start (t, before the
		// bench's), and the bench's runs.
		var sitemapRuns []SitemapRun
		addSitemapRun := func(ts taskState) {
			if idx, files, ids, ok := ParseSitemapSummary(ts.LastSummary); ok {
				sitemapRuns = append(sitemapRuns, SitemapRun{Index: idx, Files: files, IDs: ids,
					Read: float64(ts.LastD1RowsRead), Written: float64(ts.LastD1RowsWritten)})
			}
		}
		if t.Runs > 0 {
			addSitemapRun(t)
		}
		for range scaleTaskRuns {
			ts := runTask(base, t.Name)
			if ts.RateLimited > 0 {
				// The run before spent the limit's minute: a refused run is
				// not a run of the task's work.
				time.Sleep(rateLimitedWait)
				ts = runTask(base, t.Name)
			}
			addRun(&op, float64(ts.LastD1RowsRead), float64(ts.LastD1RowsWritten), float64(ts.LastSubrequests), float64(ts.LastDurationMs))
			if ts.LastError != "" {
				op.Note = "error: " + ts.LastError
			} else if t.Name == "retry-failed" {
				op.Note = ts.LastSummary
			}
			addSitemapRun(ts)
		}
		queueOf(t.Name, scaleTaskRuns, op.RunsPerDay)
		finishRuns(&op, scaleTaskRuns)
		switch {
		case t.Name == "sitemap-scan":
			// Most runs rest: billed on the product's schedule (SitemapDay).
			if read, written, ok := SitemapDay(sitemapRuns, op.RunsPerDay, float64(n), storeNewAppsPerDay); ok {
				op.Note = fmt.Sprintf("the schedule's day: %.0f rows read, %.0f written (runs measured: %.0f read, %.1f written a run)",
					read, written, op.RowsRead, op.RowsWritten)
				op.RowsRead, op.RowsWritten = read/op.RunsPerDay, written/op.RunsPerDay
			}
		case t.Name == "retry-failed":
			// Its runs requeue the catalogue's given-up apps a batch a run;
			// a day requeues those whose wait is over (GiveUpRequeuesPerDay).
			if day, ok := RetryFailedDay(op.RowsWritten, requeuedOf(op.Note), float64(shape.Failed), config.DefaultRetryFailedAfter); ok {
				op.Note = fmt.Sprintf("a day: %.0f requeues of %d given-up apps, each failing for good, at %.1f rows a requeue (runs measured: %.0f written a run)",
					day.Requeues, shape.Failed, day.RowsPerRequeue, op.RowsWritten)
				op.RowsWritten = day.Requeues * day.RowsPerRequeue / op.RunsPerDay
			}
		case float64(t.EveryS) >= dayS && t.Runs > 0 && t.LastError == "":
			// A daily task's day: its first run, the scheduler's own at the
			// Worker's start (the day's once-a-day work, e.g. the segments'
			// snapshots, over a catalogue unchanged since its last run), and
			// what the bench's re-runs write after the cycles' changes.
			op.Note = fmt.Sprintf("the scheduler's own run at the start (%d read, %d written) and the changes its %d re-runs after the cycles wrote (%.1f a run)",
				t.LastD1RowsRead, t.LastD1RowsWritten, scaleTaskRuns, op.RowsWritten)
			op.RowsRead, op.RowsWritten = max(op.RowsRead, float64(t.LastD1RowsRead)), op.RowsWritten+float64(t.LastD1RowsWritten)
			op.Subrequests, op.WallMs = max(op.Subrequests, float64(t.LastSubrequests)), max(op.WallMs, float64(t.LastDurationMs))
		}
		// The limiter calls the runs made (measured); a task that sends
		// under the reviews' limit also keeps that key busy a minute, which
		// its alarm closes (the other keys' alarms: "limiter alarms").
		op.DORequests = LimiterDelta(l0, readLimiters(base)).Calls / scaleTaskRuns
		switch t.Name {
		case "reviews-refresh":
			op.DORequests++
		case "ledger-reconcile":
			op.DORequests += reconcileObjectReads
		}
		// A task runs in the SchedulerDO's alarm: the object is active
		// for its wall time.
		op.DOActiveMs = op.WallMs
		schedRunsPerDay += op.RunsPerDay
		ops = append(ops, op)
		measured(op)
	}
	sizesCron := tableSizes(dbPath) // the cron phase's growth, reviews-refresh's reviews among it
	// The scheduler's alarm: at most one a task run (runs due together
	// share one); the facts its tasks append are sent in the same wake, and
	// the ledger's checks ride on it (durable/ledger.WakeAt).
	ops = append(ops, ScaleOp{Name: "scheduler alarms", RunsPerDay: schedRunsPerDay, DORequests: 1})
	// The tasks' queue batches, a day (queueOf above).
	qtasks := ScaleOp{Name: "queue consumer: tasks", RunsPerDay: 1,
		RowsRead: taskQueue.read, RowsWritten: taskQueue.written, QueueMessages: taskQueue.messages,
		Note: fmt.Sprintf("a day: each task's and cron's batches a run at its runs a day: %.0f batches, %.0f messages (%.0f of facts)",
			taskQueue.batches, taskQueue.messages, taskQueue.facts)}

	// The EnrichmentController, in two windows: new apps (the queue, with
	// the refreshes the tick's split gives), then refreshes alone (the
	// queue marked away). Each one's rows per app are then multiplied by
	// the design's pace and by the refreshes the policy schedules a day.
	// The scheduler is paused while the controller is measured: a task
	// that requeues apps (retry-failed) would mix new apps into the
	// refresh window.
	schedulerControl(base, "pause", `{"reason": "scale bench: enrichment windows"}`)
	defer schedulerControl(base, "resume", `{}`)
	control(base, "start", "")
	control(base, "tune", fmt.Sprintf(`{"rate_per_min": %g}`, math.Round(designAppsPerHour/60.0)))
	time.Sleep(30 * time.Second) // the pace settles
	w1 := measureEnrichment(base, logPath, simServed, windowMin)
	sizesW1 := tableSizes(dbPath)
	control(base, "stop", "")
	wranglerLocal(root, persist, "d1", "execute", "DB", "--local", "--command",
		"UPDATE app_registry SET enrichment_source = 'not_found', enriched_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE enriched_at IS NULL")
	queuedAtW2 := countRows(dbPath, "app_registry", "enriched_at IS NULL")
	control(base, "start", "")
	time.Sleep(10 * time.Second)
	w2 := measureEnrichment(base, logPath, simServed, windowMin)
	sizesEnd, runDays := tableSizes(dbPath), time.Since(runStart).Hours()/24
	perDay := 1440 / w1.mins
	// Refreshes of each window: the controller's Refreshed, the unchanged
	// ones among them.
	r1, r2 := w1.refreshes(), w2.refreshes()
	// Each window is a mix of new apps and refreshes: SplitCosts gives
	// each its own cost (window 2 may enrich apps a task requeued).
	split := func(v1, v2 float64) (float64, float64) {
		n, r, ok := SplitCosts(w1.completed, r1, v1, w2.completed, r2, v2)
		if !ok {
			fail("scale: the enrichment windows cannot tell new apps from refreshes (%v new/%v refreshes, %v/%v)", w1.completed, r1, w2.completed, r2)
		}
		return n, r
	}
	newApps := ScaleOp{Name: "enrichment: new app", PerNewApp: 1}
	ref := ScaleOp{Name: "enrichment: refresh", RunsPerDay: 0}
	newApps.RowsRead, ref.RowsRead = split(w1.read, w2.read)
	newApps.RowsWritten, ref.RowsWritten = split(w1.written, w2.written)
	newApps.Subrequests, ref.Subrequests = split(w1.upstream, w2.upstream)
	// The pages an app fetches: R2's stored pages follow them; the puts,
	// the leases' acquires and the queue's messages are a tick's
	// (TickCostOf), billed as ticks a day × the cost of a tick.
	pagesPerNew, _ := split(w1.pages, w2.pages)
	pagesPerNew = max(0, pagesPerNew)
	tc, queuePerNew := TickCostOf(w1, w2)
	newApps.Note = fmt.Sprintf("window 1: %.0f new apps and %.0f refreshes in %.1f min (%.0f new a day at the controller's pace), %.0f pages in %.0f R2 puts; window 2: %.0f and %.0f (%d queued at its start), %.0f pages in %.0f puts; %.2f pages a new app",
		w1.completed, r1, w1.mins, w1.completed*perDay, w1.pages, w1.puts, w2.completed, r2, queuedAtW2, w2.pages, w2.puts, pagesPerNew)
	// The limiter keys' alarms. Derived, not measured (the objects' counts
	// restart with each eviction): a key busy in a minute closes it with
	// one alarm (durable/limiter's Roll), and the fill month keeps the
	// store host's and the API host's keys busy every minute.
	limAlarms := ScaleOp{Name: "limiter alarms", RunsPerDay: 1440, DORequests: busyLimiterKeys,
		Note: fmt.Sprintf("derived: %d keys busy every minute, one alarm a minute each", busyLimiterKeys)}
	completed, refreshed := w1.completed*perDay, r1*perDay
	dueRefreshes := float64(tiers["warm"])*dayS/refreshInterval("warm") + float64(tiers["hot"])*dayS/refreshInterval("hot") +
		float64(tiers["cold"])*dayS/refreshInterval("cold")
	// The queue consumer: a new app's app-enriched share (its rows; the
	// messages are the ticks'), and the cron phase's per crawl cycle (its
	// events and the tasks' facts).
	qn := ScaleOp{Name: "queue consumer: new apps", PerNewApp: 1, RowsRead: queuePerNew.read, RowsWritten: queuePerNew.written}
	qs1, qs2 := w1.queue(), w2.queue()
	qn.Note = fmt.Sprintf("rows a new app (the ticks' facts apart): window 1 %.0f batches, %.0f messages (%.0f of facts) in %.0f ticks; window 2 %.0f, %.0f (%.0f) in %.0f ticks",
		qs1.batches, qs1.messages, qs1.facts, w1.ticks, qs2.batches, qs2.messages, qs2.facts, w2.ticks)
	ops = append(ops, qcyc, qtasks, qn)
	measured(qcyc)
	measured(qtasks)

	ref.RunsPerDay = dueRefreshes
	ref.Note = fmt.Sprintf("measured on %.0f refreshes in %.1f min (%.0f unchanged); runs/day = what the policy schedules", r2, w2.mins, w2.unchanged)
	ops = append(ops, newApps, ref, limAlarms)

	// Storage, table by table (scale_storage.go): the catalogue's tables
	// grow with the store's new apps, the history tables with the assumed
	// change rate (the simulator's catalogue holds still), each pruned
	// table up to its retention.
	var refreshTiers []TierApps
	for _, t := range refresh.Tiers {
		refreshTiers = append(refreshTiers, TierApps{N: float64(tiers[t]), IntervalDays: refreshInterval(t) / dayS})
	}
	kwShare := []float64{hotClusterPct, warmClusterPct, 100 - hotClusterPct - warmClusterPct}
	var keywordTiers []TierApps
	for i, iv := range []time.Duration{crawl.HotKeywordResearch, crawl.WarmKeywordResearch, crawl.ColdKeywordResearch} {
		keywordTiers = append(keywordTiers, TierApps{N: float64(shape.Keywords) * kwShare[i] / 100, IntervalDays: iv.Hours() / 24})
	}
	var chartRows float64
	for _, t := range crawl.Tiers {
		chartRows += float64(countRows(dbPath, "category_scans", "tier = '"+t.Name+"'")) / (t.Rescan.Hours() / 24) *
			float64(len(appstore.ChartCollections)*crawl.CategoryScanLimit)
	}
	day := func(d time.Duration) float64 { return d.Hours() / 24 }
	storageIn := StorageInputs{Apps: float64(n), Enriched: float64(shape.Enriched), Now: sizes0,
		Run: sizesEnd.minus(sizes0), MeasuredDays: runDays, Sample: sample, Reviews: sizesCron.minus(sizes0)["app_reviews"],
		RefreshTiers: refreshTiers, KeywordTiers: keywordTiers,
		ResultsPerSearch: crawl.KeywordSearchSize,
		// The top clusters' apps, each due once a RefreshAge.
		ReviewFetchesPerDay: float64(reviews.RefreshClusters*membersPerCluster) / day(reviews.RefreshAge),
		ChartRowsPerDay:     chartRows,
		ReviewsKeptDays:     reviews.KeptPerApp / newReviewsPerFetch * day(reviews.RefreshAge),
		RatingDays:          day(catalogue.RatingHistoryRetention), ChangeDays: day(catalogue.ChangeHistoryRetention),
		RankDays: day(catalogue.RankHistoryRetention), FactsDays: config.DefaultFactsRetentionDays, MinutesDays: day(ledgerdb.RollupRetention),
		SnapshotDays: day(segments.SnapshotRetention),
		Text: TextSizing{Real: realTextSizes(), Sim: simText.Text, VersionNotesShare: simText.VersionNotesShare,
			RegistryPerByte: PerRow(sizes0["app_registry"].Tree, sizes0["app_registry"].Payload),
			HistoryPerByte:  PerRow(sample["app_version_history"].Tree, sample["app_version_history"].Payload)}}
	doBytes, r2Bytes := dirBytes(filepath.Join(persist, "v3", "do")), dirBytes(filepath.Join(persist, "v3", "r2"))

	// The months (scale_model.go): the fill (the headline), a month after
	// it, the design's pace all month, and the long-run steady state
	// (every pruned table at its retention), each from the same model.
	rates := DefaultRates()
	rates.NewKeywordsPerNewApp = keywordsPerApp
	model := Model{Ops: ops, Tick: tc, PagesPerNewApp: pagesPerNew, Storage: storageIn, D1BytesNow: float64(bytesStart), DOBytes: float64(doBytes),
		WorkersFixedPerDay: 288 + 4 + 1 + qcycBatches*288 + taskQueue.batches}
	fillPace, steadyPace, designPace := MonthPaces(n)
	fill := model.Month(fillPace, rates, false)
	steady := model.Month(steadyPace, rates, false)
	design := model.Month(designPace, rates, false)
	longRun := model.Month(steadyPace, rates, true)
	assumptions := Assumptions(rates, fillProbeApps, newKeywords)
	sens := model.SensitivityOf(float64(n), rates, assumptions)
	m, ops, tables, storage := fill.Month, fill.Ops, fill.Tables, fill.Storage
	byText := model.TextAfterYear(fillPace, rates)
	bytesPerDay := m.BytesPerDay
	for _, o := range ops {
		if o.PerNewApp > 0 || o.PerNewKeyword > 0 || o.Name == ref.Name || o.Name == "enrichment: ticks" || o.Name == "queue consumer: ticks" {
			measured(o)
		}
	}
	months := map[string]MonthSummary{"fill": SummaryOf(m, fillPace), "steady": SummaryOf(steady.Month, steadyPace),
		"design_pace_all_month": SummaryOf(design.Month, designPace)}

	say("\nPer operation at %d apps (rows per run from D1's result metadata; runs a day at the real periods)\n", n)
	say("%-26s %9s %12s %12s %8s %9s %10s %14s %14s   %s\n", "operation", "runs/day", "rows read", "rows written", "subreqs", "wall ms", "cover days", "read/day", "written/day", "note")
	for _, o := range ops {
		cov := ""
		if o.CoverDays > 0 {
			cov = fmt.Sprintf("%.1f", o.CoverDays)
		}
		say("%-26s %9.1f %12.0f %12.1f %8.1f %9.0f %10s %14.0f %14.0f   %s\n", o.Name, o.RunsPerDay, o.RowsRead, o.RowsWritten, o.Subrequests, o.WallMs, cov,
			o.PerDay(o.RowsRead), o.PerDay(o.RowsWritten), o.Note)
	}
	say("\nRefreshes the policy schedules: %.0f a day (tiers %v); the controller did %.0f a day beside %.0f new apps a day (tuned to %d pages/min);\n",
		dueRefreshes, tiers, refreshed, completed, designAppsPerHour/60)
	say("new keywords a new app: %.3f (measured: %d apps unfilled brought %d); catalogue changes a day: %.0f at the assumed %.3f an app (the simulator has no change model at scale), %.0f seen by refreshes\n",
		keywordsPerApp, fillProbeApps, newKeywords, CatalogueChangesPerDay(float64(shape.Enriched), rates), rates.ChangesPerAppDay, fill.SeenChanges)
	say("ticks: %.0f a day, %.0f ms each (%.0f samples); R2: %.0f pages a day kept %d days at %.0f bytes (the simulator's: %.0f bytes a page); Durable Object storage %.2f MB (measured)\n",
		tc.PerDay, tc.DurationMs, w1.tickSamples+w2.tickSamples, fill.PagesPerDay, r2PagesKeptDays, rates.PageBytes,
		PerRow(float64(r2Bytes), w1.pages+w2.pages), float64(doBytes)/1e6)
	printStorage(say, tables, sizes0, sizesCron, sizesW1, sizesEnd, sample, storage)
	tx := storageIn.Text
	say("texts (stored bytes: description, release notes an app, a version's notes, languages): real %.0f, %.0f, %.0f, %.0f (%d captured apps, %s); simulated %.0f, %.0f, %.0f, %.0f; a row gains %.0f bytes (app_registry), %.0f (app_version_history, %.0f%% of its rows keep notes)\n",
		tx.Real.Description, tx.Real.ReleaseNotes, tx.Real.VersionNotes, tx.Real.Languages, tx.Real.Apps, realTextSource,
		tx.Sim.Description, tx.Sim.ReleaseNotes, tx.Sim.VersionNotes, tx.Sim.Languages, tx.RegistryRowDelta(), tx.VersionRowDelta(), 100*tx.VersionNotesShare)
	say("D1 after a year by text sizes: %.2f GB at real sizes, %.2f GB as simulated, %.2f GB at ½× the real, %.2f GB at 2×\n",
		byText.Real/1e9, byText.Simulated/1e9, byText.Half/1e9, byText.Double/1e9)
	say("\nMonths at %d apps (new apps a day; D1 rows written; overage):\n", n)
	for _, k := range []string{"fill", "steady", "design_pace_all_month"} {
		x := months[k]
		say("  %-22s %9.0f new apps/day  %6.1fM rows written  %6.1fM read  $%.2f over\n", k, x.NewAppsPerDay, x.D1RowsWrittenMonth/1e6, x.D1RowsReadMonth/1e6, x.OverageUSDMonth)
	}
	say("  %-22s %9.0f new apps/day  %6.1fM rows written  %6.1fM read  $%.2f over (pruned tables at their retention: %.0f deletes a day)\n", "steady_month",
		steadyPace, longRun.D1RowsWritten/1e6, longRun.D1RowsRead/1e6, longRun.OverageUSD, longRun.PruneRows)
	say("\nThe fill month (%d days: the catalogue crawled once, %.0f new apps a day, and kept fresh all month) at %d apps, Workers Paid prices of %s (%s):\n",
		daysPerMonth, fillPace, n, PricesDate, PricesSource)
	say("%-26s %16s %16s %10s\n", "product", "used", "included", "overage $")
	line := func(mt Meter, used float64) {
		say("%-26s %16.0f %16.0f %10.2f\n", mt.Name, used, mt.Included, m.Overage[mt.Name])
	}
	line(D1RowsRead, m.D1RowsRead)
	line(D1RowsWritten, m.D1RowsWritten)
	say("%-26s %16.2f %16.0f %10.2f   (now %.2f GB, +%.1f MB/day, after a year %.2f GB)\n", "D1 storage GB (mean)", (m.D1BytesNow+15*bytesPerDay)/1e9, D1StorageGB.Included,
		m.Overage[D1StorageGB.Name], m.D1BytesNow/1e9, bytesPerDay/1e6, m.D1BytesAfterYr/1e9)
	line(DORequests, m.DORequests)
	for _, s := range DOBreakdown(ops) {
		say("    %-32s %12.0f\n", s.Name, s.Month)
	}
	line(DODurationGBs, m.DOGBs)
	line(DOStorageRowsWritten, m.DOStorageRows)
	say("%-26s %16.4f %16.0f %10.2f\n", "Durable Object storage GB", m.DOStorageGB, DOStorageGB.Included, m.Overage[DOStorageGB.Name])
	line(QueueOps, m.QueueOps)
	line(R2ClassA, m.R2ClassA)
	line(R2ClassB, m.R2ClassB)
	say("%-26s %16.2f %16.0f %10.2f\n", "R2 storage GB", m.R2StorageGB, R2StorageGB.Included, m.Overage[R2StorageGB.Name])
	line(KVWrites, m.KVWrites)
	line(WorkersRequests, m.WorkersRequests)
	say("overage $%.2f + plan $%.2f = $%.2f a month; most rows read: %s; most rows written: %s (%.0f%%)\n", m.OverageUSD, PlanBaseUSD, m.TotalUSD,
		m.TopReader, m.TopWriter, 100*m.RowsWrittenShare[m.TopWriter])
	say("\nAssumptions (each month rests on these):\n")
	for _, a := range assumptions {
		say("  %-30s %12.4g  %s\n", a.Name, a.Value, a.Source)
	}
	say("\nSensitivity: the fill month and steady_month at half and twice each uncertain rate (D1 rows written, overage):\n")
	say("  %-30s %24s %24s %24s %24s\n", "rate", "fill ½×", "fill 2×", "steady_month ½×", "steady_month 2×")
	cell := func(rows, usd float64) string { return fmt.Sprintf("%.1fM $%.2f", rows/1e6, usd) }
	for _, x := range sens {
		say("  %-30s %24s %24s %24s %24s\n", x.Name, cell(x.Half.FillRowsWritten, x.Half.FillUSD), cell(x.Double.FillRowsWritten, x.Double.FillUSD),
			cell(x.Half.SteadyRowsWritten, x.Half.SteadyUSD), cell(x.Double.SteadyRowsWritten, x.Double.SteadyUSD))
	}
	say("D1 size: %.2f GB at the start, %.2f GB at the end (%s in all)\n", float64(bytesStart)/1e9, float64(fileBytes(dbPath))/1e9, time.Since(t0).Round(time.Second))

	if asJSON {
		ov := map[string]any{}
		for k, v := range m.Overage {
			ov[k] = math.Round(v*100) / 100
		}
		rep := scaleReport{Apps: n, D1RowsReadMonth: m.D1RowsRead, D1RowsWrittenMonth: m.D1RowsWritten, D1BytesNow: m.D1BytesNow,
			D1BytesAfterYear: m.D1BytesAfterYr, D1TextBytesAfterYear: byText,
			TextSizes: map[string]TextSizes{"real": storageIn.Text.Real, "simulated": storageIn.Text.Sim}, D1BytesPerDay: bytesPerDay, D1Tables: tables, DORequestsMonth: m.DORequests, QueueOpsMonth: m.QueueOps,
			R2ClassAMonth: m.R2ClassA, R2ClassBMonth: m.R2ClassB, KVWritesMonth: m.KVWrites, WorkersRequestsMon: m.WorkersRequests,
			OverageUSDMonth: m.OverageUSD, OverageByMeter: ov, Operations: ops, Shape: shape, PricesDate: PricesDate,
			RefreshesDuePerDay: dueRefreshes, RefreshesDonePerDay: refreshed, Months: months,
			NewKeywordsPerNewApp: keywordsPerApp, CatalogueChangesPerDay: CatalogueChangesPerDay(float64(shape.Enriched), rates),
			DOGBsMonth: m.DOGBs, R2StorageGB: m.R2StorageGB, DOStorageGB: m.DOStorageGB,
			SteadyMonth: SteadySummary{D1RowsWrittenMonth: longRun.D1RowsWritten, OverageUSDMonth: longRun.OverageUSD},
			Assumptions: assumptions, Sensitivity: sens}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	}
}

// dirBytes is the bytes of the files under dir (0 when it is missing):
// the local Durable Objects' SQLite files, R2's stored objects.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func refreshInterval(tier string) float64 {
	return refresh.Interval(tier).Seconds() // a tier's round: each app once
}

func addRun(o *ScaleOp, read, written, subreqs, wall float64) {
	o.RowsRead += read
	o.RowsWritten += written
	o.Subrequests += subreqs
	o.WallMs += wall
}

func finishRuns(o *ScaleOp, n int) {
	o.RowsRead /= float64(n)
	o.RowsWritten /= float64(n)
	o.Subrequests /= float64(n)
	o.WallMs /= float64(n)
}

type taskState struct {
	Name              string `json:"name"`
	EveryS            int64  `json:"every_s"`
	Runs              int64  `json:"runs"`
	LastDurationMs    int64  `json:"last_duration_ms"`
	LastError         string `json:"last_error"`
	LastD1RowsRead    int64  `json:"last_d1_rows_read"`
	LastD1RowsWritten int64  `json:"last_d1_rows_written"`
	LastSubrequests   int64  `json:"last_subrequests"`
	LastSummary       string `json:"last_summary"`
	// RateLimited: the run was refused by a limit (the task's upstream's
	// minute spent by the run before).
	RateLimited int `json:"consecutive_rate_limited"`
}

// rateLimitedWait is how long the bench waits before running a task
// again whose run a limit refused: the limiters' window is a minute.
const rateLimitedWait = 61 * time.Second

type schedStatus struct {
	Tasks []taskState `json:"tasks"`
}

// runTask runs a scheduler task now and returns its state after the run.
func runTask(base, name string) taskState {
	find := func() taskState {
		var st schedStatus
		getJSON(base+"/v1/scheduler/status", &st)
		for _, t := range st.Tasks {
			if t.Name == name {
				return t
			}
		}
		fail("scheduler: no task %q", name)
		return taskState{}
	}
	before := find()
	req, _ := http.NewRequest("POST", base+"/v1/scheduler/run", strings.NewReader(fmt.Sprintf(`{"task":%q}`, name)))
	req.Header.Set("Authorization", "Bearer "+benchAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail("scheduler run %s: %v", name, err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if t := find(); t.Runs > before.Runs {
			return t
		}
		time.Sleep(500 * time.Millisecond)
	}
	fail("scheduler task %s did not run in 5 minutes", name)
	return taskState{}
}

// schedulerControl posts a scheduler control (pause, resume) for every task.
func schedulerControl(base, action, body string) { adminPost(base, "/v1/scheduler/"+action, body) }

// queueSum is the queue consumer's queue.batch lines so far.
type queueSum struct{ batches, messages, facts, read, written float64 }

func (q queueSum) minus(o queueSum) queueSum {
	return queueSum{q.batches - o.batches, q.messages - o.messages, q.facts - o.facts, q.read - o.read, q.written - o.written}
}

// scaled is q times k (a run's batches at k runs).
func (q queueSum) scaled(k float64) queueSum {
	return queueSum{q.batches * k, q.messages * k, q.facts * k, q.read * k, q.written * k}
}

// settleQueue is the queue consumer's totals once its batches have
// settled: unchanged for queueQuiet (longer than the consumer's batch
// timeout, wrangler.jsonc max_batch_timeout), or at most queueSettleMax.
func settleQueue(logPath string) queueSum {
	last, since, start := queueTotals(logPath), time.Now(), time.Now()
	for time.Since(since) < queueQuiet && time.Since(start) < queueSettleMax {
		time.Sleep(time.Second)
		if q := queueTotals(logPath); q != last {
			last, since = q, time.Now()
		}
	}
	return last
}

func (q queueSum) plus(o queueSum) queueSum {
	return queueSum{q.batches + o.batches, q.messages + o.messages, q.facts + o.facts, q.read + o.read, q.written + o.written}
}

// countRows counts a table's rows (where, if not empty) in the local D1's
// file; -1 when it cannot be read.
func countRows(dbPath, table, where string) int64 {
	q := table
	if where != "" {
		q += " WHERE " + where
	}
	c, err := tableCounts(dbPath, q)
	if err != nil {
		return -1
	}
	return c[q]
}

func queueTotals(logPath string) queueSum {
	var s queueSum
	f, err := os.Open(logPath)
	if err != nil {
		return s
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b := sc.Bytes()
		i := bytes.IndexByte(b, '{')
		if i < 0 || !bytes.Contains(b, []byte(`"event":"queue.batch"`)) {
			continue
		}
		var ev struct {
			Messages      float64 `json:"messages"`
			FactsMessages float64 `json:"facts_messages"`
			D1            struct {
				RowsRead    float64 `json:"rows_read"`
				RowsWritten float64 `json:"rows_written"`
			} `json:"d1"`
		}
		if json.Unmarshal(b[i:], &ev) == nil {
			s.batches++
			s.messages += ev.Messages
			s.facts += ev.FactsMessages
			s.read += ev.D1.RowsRead
			s.written += ev.D1.RowsWritten
		}
	}
	return s
}

// localD1File is the local D1's SQLite file under a persist directory.
func localD1File(persist string) string {
	files, _ := filepath.Glob(filepath.Join(persist, "v3", "d1", "miniflare-D1DatabaseObject", "*.sqlite"))
	for _, f := range files {
		if filepath.Base(f) != "metadata.sqlite" {
			return f
		}
	}
	fail("no local D1 file under %s", persist)
	return ""
}

// fileBytes is a SQLite database's size in use (pages less free pages,
// as committed: a reader sees the write-ahead log's commits).
func fileBytes(path string) int64 {
	n, err := usedBytes(path)
	if err != nil {
		fail("size of %s: %v", path, err)
	}
	return n
}

func refreshTiers(dbPath string) map[string]int64 {
	c, err := tierQuery(dbPath)
	if err != nil {
		fail("tiers: %v", err)
	}
	return c
}

func sortedCounts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d; ", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// startScaleWrangler runs wrangler dev on the filled state with its
// Worker logs (the queue consumer's queue.batch lines) in logPath.
func startScaleWrangler(root, persist, logPath, simBase string) (string, func()) {
	port := freePort()
	cmd := exec.Command(devstack.Wrangler(root), "dev", "-c", filepath.Join(root, "wrangler.jsonc"),
		"--ip", "127.0.0.1", "--port", strconv.Itoa(port), "--inspector-port", strconv.Itoa(freePort()),
		"--persist-to", persist, "--show-interactive-dev-session=false", "--test-scheduled",
		"--var", "UPSTREAM_API_BASE:"+simBase, "--var", "UPSTREAM_STORE_BASE:"+simBase, "--var", "UPSTREAM_HINTS_BASE:"+simBase,
		"--var", "ADMIN_TOKEN:"+benchAdminToken, "--var", "LIMITER_CLIENT_TOKEN:"+benchClientToken)
	cmd.Dir, cmd.Env = root, devstack.ToolEnv(root)
	logf, _ := os.Create(logPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	devstack.InGroup(cmd)
	if err := cmd.Start(); err != nil {
		fail("wrangler dev: %v", err)
	}
	stop := func() { devstack.StopGroup(cmd); logf.Close() }
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := devstack.WaitHealthy(base, startupTimeout); err != nil {
		stop()
		fail("wrangler dev did not start: %v; see %s", err, logPath)
	}
	return base, stop
}

// enrichWindow is what one window of the controller did.
type enrichWindow struct {
	mins float64
	// refreshed counts every refresh stored, the unchanged ones among
	// them (controller.Totals.Refreshed, RefreshesUnchanged).
	completed, refreshed, unchanged, ticks float64
	limiterCalls                           float64 // the controller's limiter calls (its leases' acquires)
	read, written, upstream, pages         float64
	puts                                   float64 // R2 puts of raw pages
	q0, q1                                 queueSum
	// tickMs sums the wall time of tickSamples ticks seen (last_tick).
	tickMs, tickSamples float64
}

// refreshes is the window's refreshes: Refreshed already counts the
// unchanged ones.
func (w enrichWindow) refreshes() float64 { return w.refreshed }

// queue is the queue consumer's batches in the window.
func (w enrichWindow) queue() queueSum { return w.q1.minus(w.q0) }

// measureEnrichment watches the running controller for windowMin minutes,
// reading its status every tickSampleEvery for the last tick's wall time.
func measureEnrichment(base, logPath string, simServed func() int64, windowMin int) enrichWindow {
	e0, q0, s0, t0 := enrichStatus(base), queueTotals(logPath), simServed(), time.Now()
	var tickMs, samples float64
	seen := map[int64]bool{}
	for end := t0.Add(time.Duration(windowMin) * time.Minute); time.Now().Before(end); {
		time.Sleep(min(tickSampleEvery, time.Until(end)))
		if lt := enrichStatus(base).LastTick; lt != nil && !seen[lt.At] {
			seen[lt.At] = true
			tickMs += float64(lt.DurationMs)
			samples++
		}
	}
	e1, q1, s1 := enrichStatus(base), queueTotals(logPath), simServed()
	d := func(a, b int64) float64 { return float64(b - a) }
	return enrichWindow{mins: time.Since(t0).Minutes(),
		completed: d(e0.Totals.Completed, e1.Totals.Completed), refreshed: d(e0.Totals.Refreshed, e1.Totals.Refreshed),
		unchanged: d(e0.Totals.RefreshesUnchanged, e1.Totals.RefreshesUnchanged), ticks: d(e0.Totals.Ticks, e1.Totals.Ticks),
		read: d(e0.Totals.D1RowsRead, e1.Totals.D1RowsRead), written: d(e0.Totals.D1RowsWritten, e1.Totals.D1RowsWritten),
		upstream: d(s0, s1), pages: d(e0.Totals.PageRequests, e1.Totals.PageRequests), q0: q0, q1: q1,
		puts: d(e0.Totals.PagePuts, e1.Totals.PagePuts), limiterCalls: d(e0.Totals.LimiterCalls, e1.Totals.LimiterCalls),
		tickMs: tickMs, tickSamples: samples}
}

// tickSampleEvery is how often a window reads the controller's last tick
// (its ticks are pacing.TickInterval apart).
const tickSampleEvery = 10 * time.Second

// coverRuns is the runs each pass over the catalogue takes to cover it
// once: its table's rows over the apps a run (from the pass's bounds).
// Cover days are these over the task's runs a day.
func coverRuns(shape ScaleShape) map[string]float64 {
	return map[string]float64{
		"rating-sweep":    float64(shape.Enriched) / (tasks.RatingSweepBatchApps * tasks.RatingSweepMaxBatches),
		"catalogue-sweep": float64(shape.Apps) / (catalogue.SweepBatchApps * catalogue.SweepMaxBatches),
		"catalogue-stale": float64(shape.Apps) / (catalogue.StaleBatchApps * catalogue.StaleMaxBatches),
		"history-prune":   float64(shape.Apps) / (catalogue.PruneBatchApps * catalogue.PruneMaxBatches),
	}
}

// printStorage prints each table's bytes now, its growth in each phase of
// the run (the cron phase, the new-app window, the refresh window), its
// projected growth a day and its bytes after a year.
func printStorage(say func(string, ...any), tables []TableYear, now, cron, w1, end, sample Sizes, st Storage) {
	say("\nD1 storage by table (pages in use, indexes included, from dbstat; MB): now, growth in the cron phase / window 1 (new apps) / window 2 (refreshes), bytes a row in the history sample, projected a day, after %d days\n", storageDays)
	say("%-26s %10s %10s %8s %8s %8s %8s %10s %6s %10s   %s\n", "table", "rows now", "MB now", "cron", "w1", "w2", "B/row", "KB/day", "cap d", "MB a year", "basis")
	_, byAfter := StorageAfter(tables, storageDays)
	mb := func(b float64) float64 { return b / 1e6 }
	for _, t := range byAfter {
		if t.After(storageDays) < 1e5 && t.BytesNow < 1e5 {
			continue // under 0.1 MB now and after a year
		}
		say("%-26s %10.0f %10.1f %8.2f %8.2f %8.2f %8.0f %10.1f %6.0f %10.1f   %s\n", t.Table, t.RowsNow, mb(t.BytesNow),
			mb(cron[t.Table].Bytes-now[t.Table].Bytes), mb(w1[t.Table].Bytes-cron[t.Table].Bytes), mb(end[t.Table].Bytes-w1[t.Table].Bytes),
			PerRow(sample[t.Table].Bytes, sample[t.Table].Rows), t.BytesPerDay/1e3, t.CapDays, mb(t.After(storageDays)), t.Basis)
	}
	say("D1 in use: %.2f GB now, +%.1f MB a day in the month ahead, %.2f GB after %d days (tables under 0.1 MB left out)\n",
		st.Now/1e9, st.PerDay/1e6, st.AfterYear/1e9, storageDays)
}
