//go:build unix

package main

import "math"

// The month arithmetic of the scale bench, pure: per-operation costs
// measured once, times runs a day, times daysPerMonth, billed at prices.go.

// daysPerMonth is the billing month (Cloudflare's examples use 30 days).
const daysPerMonth = 30

// ScaleOp is one operation's measured cost per run and its runs a day.
type ScaleOp struct {
	Name        string  `json:"name"`
	RunsPerDay  float64 `json:"runs_per_day"`
	RowsRead    float64 `json:"rows_read"`    // per run
	RowsWritten float64 `json:"rows_written"` // per run
	Subrequests float64 `json:"subrequests"`  // per run
	WallMs      float64 `json:"wall_ms"`      // per run
	// Per run, for the other products.
	DORequests    float64 `json:"do_requests"`
	QueueMessages float64 `json:"queue_messages"`
	R2ClassA      float64 `json:"r2_class_a"`
	R2ClassB      float64 `json:"r2_class_b"`
	KVWrites      float64 `json:"kv_writes"`
	// CoverDays is how long the operation takes to pass over its table
	// once (0: not a pass).
	CoverDays float64 `json:"cover_days,omitempty"`
	// PerNewApp > 0 marks an operation whose runs follow the pace of new
	// apps: PerNewApp runs a new app (WithNewApps sets its runs a day).
	PerNewApp float64 `json:"per_new_app,omitempty"`
	// PerNewKeyword > 0 marks an operation whose runs follow the keywords
	// new apps bring: PerNewKeyword runs a new keyword (Model.Month).
	PerNewKeyword float64 `json:"per_new_keyword,omitempty"`
	// DOActiveMs is the time a run keeps a Durable Object active (billed
	// as duration, GB-s); DOStorageRows the rows it writes to one's storage.
	DOActiveMs    float64 `json:"do_active_ms,omitempty"`
	DOStorageRows float64 `json:"do_storage_rows,omitempty"`
	Note          string  `json:"note,omitempty"`
}

// Paces of new apps a month is billed at. The design's pace is a crawl
// filling its catalogue (1.1M apps in 6 days), not a store's growth: kept
// up for 30 days it would enrich 5.5M new apps, five catalogues' worth. So
// the bench bills three months:
//   - fill: the month a deployment crawls its whole catalogue once (n new
//     apps) and keeps every app as fresh as the policy promises all month
//     (an upper bound: the refreshes and crawl cycles of a full catalogue
//     from day one). This is the headline figure.
//   - steady: a month after the fill, new apps at the store's own pace.
//   - design pace all month: the design's 182,400 new apps a day for 30
//     days, for comparison with that literal reading.
const (
	// storeNewAppsPerDay is the App Store's growth: third-party tallies
	// put it at 988 new apps a day (September 2021) and ~34,000 a month
	// (first half of 2022); 1,100 a day.
	storeNewAppsPerDay = 1100
)

// WithNewApps is ops with every new-app operation at perDay new apps a day.
func WithNewApps(ops []ScaleOp, perDay float64) []ScaleOp {
	out := make([]ScaleOp, len(ops))
	for i, o := range ops {
		if o.PerNewApp > 0 {
			o.RunsPerDay = o.PerNewApp * perDay
		}
		out[i] = o
	}
	return out
}

// MonthPaces are the new apps a day of the three billed months at a
// catalogue of apps (see the paces above).
func MonthPaces(apps int) (fill, steady, designPace float64) {
	return float64(apps)/daysPerMonth + storeNewAppsPerDay, storeNewAppsPerDay, designAppsPerHour * 24
}

// PerDay is v per run at the op's runs a day.
func (o ScaleOp) PerDay(v float64) float64 { return v * o.RunsPerDay }

// Month is a month's usage per product and its bill.
type Month struct {
	D1RowsRead, D1RowsWritten  float64
	D1BytesNow, D1BytesAfterYr float64
	DORequests, QueueOps       float64
	R2ClassA, R2ClassB         float64
	KVWrites, WorkersRequests  float64
	// DOGBs is Durable Object duration (GB-s); DOStorageRows the rows
	// written to the objects' storage; R2StorageGB and DOStorageGB the
	// bytes stored, in GB.
	DOGBs, DOStorageRows        float64
	R2StorageGB, DOStorageGB    float64
	Overage                     map[string]float64 // USD past the plan's inclusions, by meter
	OverageUSD, TotalUSD        float64            // TotalUSD adds the plan's base
	RowsWrittenShare            map[string]float64 // each op's share of rows written
	TopReader, TopWriter        string
	BytesPerDay, WorkersPerDayN float64
}

// Storage is D1's size now, its growth a day in the month ahead (no
// pruner's cap is reached within it) and its size after a year, table by
// table (ProjectTables, StorageAfter).
// R2Bytes and DOBytes are R2's pages and the Durable Objects' storage.
type Storage struct{ Now, PerDay, AfterYear, R2Bytes, DOBytes float64 }

// StorageOf totals the tables' projections: the size in use now (what
// the tables' texts at real sizes add to it included) plus each table's
// growth.
func StorageOf(bytesNow float64, tables []TableYear) Storage {
	st := Storage{Now: bytesNow}
	for _, t := range tables {
		st.Now += t.TextBytesNow
	}
	st.AfterYear = st.Now
	for _, t := range tables {
		st.PerDay += max(0, t.BytesPerDay)
		st.AfterYear += t.After(storageDays) - t.BytesNow
	}
	return st
}

// MonthOf totals ops over a month. st is D1's storage (the month is billed
// at its mean size, now + 15 days); workersPerDay is the Worker's own
// invocations a day (cron and queue batches; Durable Object calls are DO
// requests).
func MonthOf(ops []ScaleOp, st Storage, workersPerDay float64) Month {
	bytesNow, bytesPerDay := st.Now, st.PerDay
	m := Month{D1BytesNow: bytesNow, D1BytesAfterYr: st.AfterYear, BytesPerDay: bytesPerDay, R2StorageGB: st.R2Bytes / 1e9, DOStorageGB: st.DOBytes / 1e9,
		WorkersRequests: workersPerDay * daysPerMonth, WorkersPerDayN: workersPerDay,
		Overage: map[string]float64{}, RowsWrittenShare: map[string]float64{}}
	var topR, topW float64
	for _, o := range ops {
		r, w := o.PerDay(o.RowsRead)*daysPerMonth, o.PerDay(o.RowsWritten)*daysPerMonth
		m.D1RowsRead += r
		m.D1RowsWritten += w
		m.DORequests += o.PerDay(o.DORequests) * daysPerMonth
		m.QueueOps += o.PerDay(o.QueueMessages) * daysPerMonth * QueueOpsPerEvent
		m.R2ClassA += o.PerDay(o.R2ClassA) * daysPerMonth
		m.R2ClassB += o.PerDay(o.R2ClassB) * daysPerMonth
		m.KVWrites += o.PerDay(o.KVWrites) * daysPerMonth
		m.DOGBs += o.PerDay(o.DOActiveMs) / 1000 * doGB * daysPerMonth
		m.DOStorageRows += o.PerDay(o.DOStorageRows) * daysPerMonth
		if r > topR {
			topR, m.TopReader = r, o.Name
		}
		if w > topW {
			topW, m.TopWriter = w, o.Name
		}
	}
	for _, o := range ops {
		if m.D1RowsWritten > 0 {
			m.RowsWrittenShare[o.Name] = o.PerDay(o.RowsWritten) * daysPerMonth / m.D1RowsWritten
		}
	}
	meanGB := (bytesNow + 15*max(0, bytesPerDay)) / 1e9
	for _, x := range []struct {
		m    Meter
		used float64
	}{
		{D1RowsRead, m.D1RowsRead}, {D1RowsWritten, m.D1RowsWritten}, {D1StorageGB, meanGB},
		{DORequests, m.DORequests}, {QueueOps, m.QueueOps}, {R2ClassA, m.R2ClassA}, {R2ClassB, m.R2ClassB},
		{KVWrites, m.KVWrites}, {WorkersRequests, m.WorkersRequests},
		{DODurationGBs, m.DOGBs}, {R2StorageGB, m.R2StorageGB}, {DOStorageGB, m.DOStorageGB}, {DOStorageRowsWritten, m.DOStorageRows},
	} {
		usd := x.m.Overage(x.used)
		m.Overage[x.m.Name] = usd
		m.OverageUSD += usd
	}
	m.OverageUSD = math.Round(m.OverageUSD*100) / 100
	m.TotalUSD = PlanBaseUSD + m.OverageUSD
	return m
}

// MonthSummary is one billed month in brief (the -json report's months).
type MonthSummary struct {
	NewAppsPerDay      float64 `json:"new_apps_per_day"`
	D1RowsReadMonth    float64 `json:"d1_rows_read_month"`
	D1RowsWrittenMonth float64 `json:"d1_rows_written_month"`
	OverageUSDMonth    float64 `json:"overage_usd_month"`
}

// SteadySummary is the long-run steady month in brief (the -json report's
// steady_month): every pruned table at its retention.
type SteadySummary struct {
	D1RowsWrittenMonth float64 `json:"d1_rows_written_month"`
	OverageUSDMonth    float64 `json:"overage_usd_month"`
}

// SummaryOf is m in brief, at pace new apps a day.
func SummaryOf(m Month, pace float64) MonthSummary {
	return MonthSummary{NewAppsPerDay: pace, D1RowsReadMonth: m.D1RowsRead, D1RowsWrittenMonth: m.D1RowsWritten, OverageUSDMonth: m.OverageUSD}
}

// ClassAPerApp is the R2 Class A an app costs: its page requests
// (pagesPerApp) over the pages one put carried in its window. The
// EnrichmentController puts a tick's pages in one object (one put a tick
// with pages, a second when the first failed, and one for a page too big
// for the batch), so a put carries the tick's pages. A window with pages
// and no put counted (a worker before batches, whose status has no
// page_puts) is a put a page.
func ClassAPerApp(pagesPerApp, windowPages, windowPuts float64) float64 {
	if windowPages <= 0 || windowPuts <= 0 {
		return pagesPerApp
	}
	return pagesPerApp * windowPuts / windowPages
}

// SplitCosts solves what one new app and one refresh cost from two
// windows of the controller, each a mix: window i enriched newI new apps
// and refreshI refreshes for a total vI. Window 1 is mostly new apps and
// window 2 mostly refreshes, but a window 2 may enrich apps a task put
// back in the queue meanwhile, so neither is taken as pure. ok is false
// when the windows do not tell the two apart (then nothing is solved).
func SplitCosts(new1, refresh1, v1, new2, refresh2, v2 float64) (perNew, perRefresh float64, ok bool) {
	det := new1*refresh2 - new2*refresh1
	if math.Abs(det) < 1e-9 {
		return 0, 0, false
	}
	return (v1*refresh2 - v2*refresh1) / det, (new1*v2 - new2*v1) / det, true
}
