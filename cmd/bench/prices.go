package main

// The Workers Paid plan's published prices, the only place the bench keeps
// them (cmd/bench -only-scale bills a month with them). Looked up on
// 2026-11-25 with the project's documentation search; each figure names the
// page it came from (some read through mirrors of those pages, noted).
//
//   - Workers: https://developers.cloudflare.com/workers/platform/pricing/
//     ($5/month; 10M requests + $0.30/M; 30M CPU-ms + $0.02/M CPU-ms, as
//     quoted on https://developers.cloudflare.com/workflows/reference/pricing/,
//     "identical to Workers Standard pricing")
//   - D1: https://developers.cloudflare.com/d1/platform/pricing/ (25B rows
//     read + $0.001/M; 50M rows written + $1.00/M; 5 GB + $0.75/GB-month;
//     read through the api-evangelist/cloudflare-d1 mirror and a wiki table
//     dated 2026-08-03)
//   - Durable Objects: https://developers.cloudflare.com/durable-objects/platform/pricing/
//     (1M requests + $0.15/M, alarms and RPC calls included; 400,000 GB-s
//     + $12.50/M GB-s, billed at 128 MB an object while it runs or is
//     idle but cannot hibernate). SQLite-backed storage (billed since
//     2026-01-07, the Durable Objects release notes): 5 GB-month +
//     $0.20/GB-month and 50M rows written + $1.00/M, as the pricing page
//     quotes them; the search's excerpt of that page stopped before its
//     storage table, so these two were not re-read on PricesDate.
//   - Queues: https://developers.cloudflare.com/queues/platform/pricing/
//     (1M operations + $0.40/M; an operation is 64 KB written, read or
//     deleted: a delivered message is 3; api-evangelist/cloudflare-queues mirror)
//   - R2: https://developers.cloudflare.com/r2/pricing/ (10 GB-month +
//     $0.015/GB-month; Class A 1M + $4.50/M; Class B 10M + $0.36/M)
//   - KV: https://developers.cloudflare.com/kv/platform/pricing/ (reads 10M
//     + $0.50/M; writes 1M + $5.00/M; api-evangelist/cloudflare-kv mirror)

// PricesSource and PricesDate say where and when the figures were read.
const (
	PricesSource = "developers.cloudflare.com/{workers,d1,durable-objects,queues,r2,kv}/…/pricing"
	PricesDate   = "2026-11-25"
)

// PlanBaseUSD is the Workers Paid subscription.
const PlanBaseUSD = 5.0

// Meter is one billed quantity: what the plan includes a month and the
// price of each million units past it.
type Meter struct {
	Name        string
	Included    float64 // units a month
	USDPerUnitM float64 // USD per million units over Included
}

// The metered quantities of the products storecrawl uses.
var (
	WorkersRequests = Meter{"Workers requests", 10e6, 0.30}
	WorkersCPUMs    = Meter{"Workers CPU ms", 30e6, 0.02}
	D1RowsRead      = Meter{"D1 rows read", 25e9, 0.001}
	D1RowsWritten   = Meter{"D1 rows written", 50e6, 1.00}
	// D1Storage is in GB(-month): $0.75 a GB-month is 0.75 per "million"
	// only in the sense Overage uses; StorageUSD prices it directly.
	D1StorageGB          = Meter{"D1 storage GB", 5, 0.75e6}
	DORequests           = Meter{"Durable Object requests", 1e6, 0.15}
	DODurationGBs        = Meter{"Durable Object GB-s", 400e3, 12.50}
	QueueOps             = Meter{"Queues operations", 1e6, 0.40}
	R2ClassA             = Meter{"R2 Class A", 1e6, 4.50}
	R2ClassB             = Meter{"R2 Class B", 10e6, 0.36}
	R2StorageGB          = Meter{"R2 storage GB", 10, 0.015e6}
	DOStorageGB          = Meter{"Durable Object storage GB", 5, 0.20e6}
	DOStorageRowsWritten = Meter{"Durable Object rows written", 50e6, 1.00}
	KVReads              = Meter{"KV reads", 10e6, 0.50}
	KVWrites             = Meter{"KV writes", 1e6, 5.00}
	QueueOpsPerEvent     = 3.0 // write + read + delete of one message under 64 KB
)

// Overage is what used units of m cost past the plan's inclusion.
func (m Meter) Overage(used float64) float64 {
	return max(0, used-m.Included) / 1e6 * m.USDPerUnitM
}
