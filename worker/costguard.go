package worker

import (
	"encoding/json"

	"storecrawl/durable/scheduler"
	"storecrawl/worker/config"
	"storecrawl/worker/crawl"
	"storecrawl/worker/guard"
)

// The cost guard's meters of each invocation kind (docs/cost.md): what an
// invocation spent, from its measured D1 cost and counts of its calls;
// the DO requests are per-kind estimates.
const (
	// CrawlCycleWakes are the crawl cycle's two wakes (controller,
	// scheduler): Durable Object requests.
	CrawlCycleWakes = 2
	// SchedulerRunDORequests is a task run's Durable Object requests: the
	// SchedulerDO's alarm that runs it and the finish that records it.
	SchedulerRunDORequests = 2
)

// CronUsage is what a cron run spent: its D1 rows (D1's metadata), the
// invocation, the KV read and write of its record (CronLog.Record), and
// for the crawl cycle its wakes and limiter reservations (one a scan, one
// for a task's searches).
func CronUsage(run CronRun) guard.Usage {
	u := guard.Usage{WorkersRequests: 1, KVReads: 1, KVWrites: 1}
	if run.D1 != nil {
		u.D1RowsRead, u.D1RowsWritten = run.D1.RowsRead, run.D1.RowsWritten
	}
	if run.Cron == config.CronCrawlCycle {
		u.DORequests = CrawlCycleWakes
		for r := run.Crawl; r != nil; r = r.Side {
			if r.Action == "category_scan" {
				u.DORequests++
			}
			if r.Searches > 0 {
				u.DORequests++
			}
		}
	}
	return u
}

// SchedulerRunUsage is what a periodic task run spent.
func SchedulerRunUsage(res scheduler.ResultMsg) guard.Usage {
	return guard.Usage{D1RowsRead: res.D1RowsRead, D1RowsWritten: res.D1RowsWritten, DORequests: SchedulerRunDORequests}
}

// QueueBatchUsage is what a consumer batch spent: 3 operations a message
// (its write, this read, the ack's delete) and the batch's D1 rows.
func QueueBatchUsage(messages int, rowsRead, rowsWritten int64) guard.Usage {
	return guard.Usage{QueueOps: int64(messages) * guard.QueueOpsPerMessage, D1RowsRead: rowsRead, D1RowsWritten: rowsWritten}
}

// ControllerUsage is the EnrichmentController's lifetime totals (its GET
// /status) as usage: its runs' D1 rows (D1's metadata), a Durable Object
// request a tick (its alarm) and a limiter call, an R2 put (Class A) a
// page batch and a read (Class B) a page parsed from R2. ok is false for a
// body without totals.
func ControllerUsage(status []byte) (u guard.Usage, ok bool) {
	var st struct {
		Totals *struct {
			D1RowsRead    int64 `json:"d1_rows_read"`
			D1RowsWritten int64 `json:"d1_rows_written"`
			Ticks         int64 `json:"ticks"`
			LimiterCalls  int64 `json:"limiter_calls"`
			PagePuts      int64 `json:"page_puts"`
			PagesFromR2   int64 `json:"pages_from_r2"`
		} `json:"totals"`
	}
	if json.Unmarshal(status, &st) != nil || st.Totals == nil {
		return u, false
	}
	t := st.Totals
	return guard.Usage{D1RowsRead: t.D1RowsRead, D1RowsWritten: t.D1RowsWritten, DORequests: t.Ticks + t.LimiterCalls,
		R2ClassA: t.PagePuts, R2ClassB: t.PagesFromR2}, true
}

// CrawlSlow is the crawl cycle's share of the guard's throttle.
func CrawlSlow(th guard.Throttle) crawl.Slow {
	return crawl.Slow{FirstSearches: th.Slowed(guard.WorkFirstSearches), ReSearches: th.Slowed(guard.WorkReSearches), Scans: th.Slowed(guard.WorkScans)}
}
