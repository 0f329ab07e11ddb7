package api

import (
	"context"
	"encoding/json"
	"time"

	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/reviews"
)

// ControllerCaller forwards one control-plane call to the EnrichmentController.
type ControllerCaller interface {
	CallController(ctx context.Context, method, path string, body []byte) (status int, respBody []byte, err error)
}

// LimiterCaller forwards one call to the OmniLimiter object of a key.
type LimiterCaller interface {
	CallLimiter(ctx context.Context, key, method, path string, body []byte) (status int, respBody []byte, err error)
}

// SchedulerCaller forwards one call to the SchedulerDO.
type SchedulerCaller interface {
	CallScheduler(ctx context.Context, method, path string, body []byte) (status int, respBody []byte, err error)
}

// ChartReader reads a chart kept in KV by its key ("" when not fetched yet).
type ChartReader interface {
	Get(ctx context.Context, key string) (string, error)
}

// MarketReader lists market clusters as JSON objects, by score or by
// size: a page after a cursor ("" from the first; d1.ErrBadCursor for one
// it did not hand out) and the next page's cursor ("" at the end).
type MarketReader interface {
	List(ctx context.Context, byScore bool, limit int, cursor string) ([]json.RawMessage, string, error)
}

// SegmentReader reads market segments (worker/segments.Store): a page
// by sort after a cursor (segments.ErrBadCursor for one it did not hand
// out), and one segment in full (found false for an unknown id).
type SegmentReader interface {
	List(ctx context.Context, sort string, limit int, cursor string) ([]json.RawMessage, string, error)
	Get(ctx context.Context, id int64) (json.RawMessage, bool, error)
}

// AppReader reads enriched records.
type AppReader interface {
	// App returns the record as JSON (false when there is none).
	App(ctx context.Context, trackID int64) (json.RawMessage, bool, error)
}

// ReviewReader reads stored customer reviews and computes a cluster's
// complaint themes (worker/reviews.D1Store).
type ReviewReader interface {
	// AppReviews is a page of an app's reviews after a cursor, and the
	// next page's cursor (as MarketReader's).
	AppReviews(ctx context.Context, appID int64, limit int, cursor string) ([]json.RawMessage, string, error)
	ClusterThemes(ctx context.Context, clusterID string) (themes []reviews.Theme, reviewCount int, found bool, err error)
}

// CronReader reads what the cron handler last did.
type CronReader interface {
	LastCronRuns(ctx context.Context) (json.RawMessage, error)
}

// LedgerReader serves the run history and the dashboard's counts.
type LedgerReader interface {
	History(ctx context.Context, q ledgerdb.HistoryQuery) (ledgerdb.History, error)
	PipelineCounts(ctx context.Context) (map[string]int64, error)
	// LedgerPage compares a page of ledger writers with D1 now: the
	// configured ones on the first page (after ""), then up to n that D1
	// knows after `after` (history.ReconcilePage).
	LedgerPage(ctx context.Context, after string, n int) (ledgerdb.Page, error)
	// Mismatches reads the mismatch record: open ones, and repaired or
	// cleared ones, newest first (history.MismatchListCap each).
	Mismatches(ctx context.Context) (ledgerdb.Mismatches, error)
	ConsumerStats() map[string]int64
}

// QualityReader reads the latest daily data-quality check as stored
// (worker/tasks.QualityLog; nil before any run).
type QualityReader interface {
	LatestQuality(ctx context.Context) (json.RawMessage, error)
}

// DeadLetterReader lists recorded dead letters as JSON objects, newest
// first: a page after a cursor, and the next page's cursor (as
// MarketReader's).
type DeadLetterReader interface {
	DeadLetters(ctx context.Context, limit int, cursor string) ([]json.RawMessage, string, error)
}

// Reparser starts and reports page reparses (worker/enrichment.Reparser).
type Reparser interface {
	StartReparse(ctx context.Context, scope string) (json.RawMessage, error)
	ReparseStatus(ctx context.Context) (json.RawMessage, error)
}

// FailedRequeuer puts given-up enrichment items back in the queue
// (worker/enrichment.D1Store).
type FailedRequeuer interface {
	RetryFailed(ctx context.Context, class string, olderThan, now time.Time) (int, error)
}

// DeadReplayer sends dead letters back to their queue in full
// (worker/ledgerdb.Service with the EVENTS queue).
type DeadReplayer interface {
	ReplayDeadLetters(ctx context.Context, messageID string, send func(ctx context.Context, body string) error) (ledgerdb.ReplayResult, error)
}

// FactFaults is the test-only switch that makes the facts consumer fail
// before it writes (a D1 outage as the consumer sees it).
type FactFaults interface {
	SetFailBeforeWrite(on bool)
}

// EventSender puts one raw message on the EVENTS queue.
type EventSender interface {
	Send(ctx context.Context, body string) error
}
