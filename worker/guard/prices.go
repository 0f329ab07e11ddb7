package guard

// The Workers Paid plan's monthly inclusions and overage prices of the
// products the guard meters (docs/cost.md). Each figure was checked
// against the product's pricing page (or a mirror of it, noted):
//
//   - Workers requests: 10M + $0.30/M. https://developers.cloudflare.com/workers/platform/pricing/
//     (as quoted on https://developers.cloudflare.com/workflows/reference/pricing/,
//     "identical to Workers Standard pricing").
//   - D1: 25B rows read + $0.001/M; 50M rows written + $1.00/M (5 GB
//     stored, not metered here). https://developers.cloudflare.com/d1/platform/pricing/
//     (read through the api-evangelist/cloudflare-d1 FinOps mirror).
//   - Durable Objects: 1M requests + $0.15/M, "HTTP requests, RPC
//     sessions, WebSocket messages and alarm invocations" (400,000 GB-s
//     duration, not metered here). https://developers.cloudflare.com/durable-objects/platform/pricing/
//   - Queues: 1M operations + $0.40/M; an operation is 64 KB written,
//     read or deleted, so a delivered message is 3.
//     https://developers.cloudflare.com/queues/platform/pricing/
//     (api-evangelist/cloudflare-queues mirror).
//   - R2: Class A 1M + $4.50/M; Class B 10M + $0.36/M (10 GB stored, not
//     metered here). https://developers.cloudflare.com/r2/pricing/
//   - KV: 10M reads + $0.50/M; 1M writes (deletes and lists alike) +
//     $5.00/M. https://developers.cloudflare.com/kv/platform/pricing/
//     (api-evangelist/cloudflare-kv mirror; the plan's own alert reads
//     "10 million read operations and 1 million write, delete, and list
//     operations").
//
// cmd/bench/prices.go keeps the same figures for the bench's bill.

// Product is one metered quantity of the plan.
type Product struct {
	// Key names it in usage, status and docs.
	Key string `json:"product"`
	// Included is what the plan includes a month.
	Included float64 `json:"included"`
	// USDPerM is the price of each million units past Included.
	USDPerM float64 `json:"usd_per_million"`
	// Metered says how the guard counts it: "exact" (from the platform's
	// own result metadata or a counter of every call) or "estimated"
	// (a per-invocation constant, or a count that misses some callers).
	Metered string `json:"metered"`
}

// Products, in the order status shows them.
var Products = []Product{
	{"d1_rows_read", 25e9, 0.001, "exact"},
	{"d1_rows_written", 50e6, 1.00, "exact"},
	{"do_requests", 1e6, 0.15, "estimated"},
	{"queue_ops", 1e6, 0.40, "estimated"},
	{"r2_class_a", 1e6, 4.50, "exact"},
	{"r2_class_b", 10e6, 0.36, "estimated"},
	{"kv_reads", 10e6, 0.50, "estimated"},
	{"kv_writes", 1e6, 5.00, "estimated"},
	{"workers_requests", 10e6, 0.30, "estimated"},
}

// QueueOpsPerMessage is a delivered message's operations: write, read,
// delete (a message under 64 KB; every EVENTS message is).
const QueueOpsPerMessage = 3

// Overage is what used units of p cost past the plan's inclusion, in USD.
func (p Product) Overage(used float64) float64 {
	return max(0, used-p.Included) / 1e6 * p.USDPerM
}
