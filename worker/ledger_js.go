//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall/js"
	"time"

	"github.com/syumai/workers/cloudflare"

	"storecrawl/durable/ledger"
	"storecrawl/worker/d1"
	"storecrawl/worker/logx"
)

// ledgerPlan({writer, step}, nowMs) → ledger.Plan JSON: the shim's Ledger
// asks what to do after each append, send and failure.
func ledgerPlan(args []js.Value) (any, error) {
	var in struct {
		Writer ledger.Writer `json:"writer"`
		Step   ledger.Step   `json:"step"`
	}
	if err := json.Unmarshal([]byte(args[0].String()), &in); err != nil {
		return nil, fmt.Errorf("ledgerPlan: %w", err)
	}
	return ledger.Next(in.Writer, in.Step, ledgerRetention(), time.UnixMilli(int64(args[1].Float()))), nil
}

// ledgerRetention reads LEDGER_RETENTION_DAYS; a bad value is logged and
// the default kept, so a typo cannot prune the ledger early.
func ledgerRetention() time.Duration {
	raw := cloudflare.Getenv("LEDGER_RETENTION_DAYS")
	days, err := strconv.ParseFloat(raw, 64)
	if raw == "" {
		days, err = 0, nil
	}
	d, rerr := ledger.RetentionFromDays(days)
	if err != nil || rerr != nil {
		logx.Event("ledger.bad_config", map[string]any{"level": logx.Error, "LEDGER_RETENTION_DAYS": raw})
		return ledger.DefaultRetention
	}
	return d
}

// armLedgerFaults reads the test-only fault injection setting once.
func armLedgerFaults() {
	n, _ := strconv.ParseInt(cloudflare.Getenv("LEDGER_FAULT_FAIL_AFTER_WRITE"), 10, 64)
	FactsConsumer.ArmFaults(max(n, 0))
}

// WriteFacts runs the inserts and returns how many rows they added.
func (p Platform) WriteFacts(ctx context.Context, stmts []d1.Stmt) (int64, error) {
	return p.execReturning(ctx, stmts)
}

func (Platform) FactTotals(ctx context.Context, source string) (map[string]int64, error) {
	rows, err := queryAll(ctx, factTotalsSQL, source)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Get("counter").String()] = int64(r.Get("total").Float())
	}
	return out, nil
}

func (Platform) SourcesInD1(ctx context.Context) ([]string, error) {
	rows, err := queryAll(ctx, sourcesSQL)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Get("source").String()
	}
	return out, nil
}

// LedgerReport asks a writer object for its side (GET /ledger).
func (p Platform) LedgerReport(ctx context.Context, source string) (ledger.Report, error) {
	var status int
	var body []byte
	var err error
	switch {
	case source == ledger.SourceScheduler:
		status, body, err = callDO(bindingScheduler, schedulerName, "", "GET", "/ledger", nil)
	case strings.HasPrefix(source, ledger.SourceControllerPrefix):
		status, body, err = callDO(bindingController, strings.TrimPrefix(source, ledger.SourceControllerPrefix), cloudflare.Getenv("ENRICHMENT_LOCATION_HINT"), "GET", "/ledger", nil)
	case strings.HasPrefix(source, ledger.SourceLimiterPrefix):
		key := strings.TrimPrefix(source, ledger.SourceLimiterPrefix)
		q, _ := json.Marshal(map[string]string{"key": key})
		status, body, err = p.CallLimiter(ctx, key, "GET", "/ledger", q)
	default:
		return ledger.Report{}, fmt.Errorf("unknown ledger source %q", source)
	}
	if err != nil {
		return ledger.Report{}, err
	}
	if status != 200 {
		return ledger.Report{}, fmt.Errorf("%s /ledger: HTTP %d: %s", source, status, body)
	}
	var r ledger.Report
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("%s /ledger: %w", source, err)
	}
	return r, nil
}

// historyCache keeps /v1/history answers briefly per isolate: a dashboard
// refreshing every few seconds reads D1 once per historyCacheTTL.
var (
	historyMu    sync.Mutex
	historyCache = map[HistoryQuery]cachedHistory{}
)

type cachedHistory struct {
	at time.Time
	h  History
}

// historyCacheTTL bounds how stale a chart may be.
const historyCacheTTL = 20 * time.Second

func (p Platform) History(ctx context.Context, q HistoryQuery) (History, error) {
	key := q
	key.Until = time.Time{}
	key.Since = q.Since.Truncate(q.Bucket)
	historyMu.Lock()
	if c, ok := historyCache[key]; ok && time.Since(c.at) < historyCacheTTL {
		historyMu.Unlock()
		return c.h, nil
	}
	historyMu.Unlock()
	since, until := q.Since.UnixMilli(), q.Until.UnixMilli()
	rows, err := queryAll(ctx, historyTicksSQL, q.Source(), since, until)
	if err != nil {
		return History{}, err
	}
	ticks := make([]HistoryFact, 0, len(rows))
	for _, r := range rows {
		f := HistoryFact{Kind: r.Get("kind").String(), At: int64(r.Get("at").Float())}
		json.Unmarshal([]byte(r.Get("counters").String()), &f.Counters)
		json.Unmarshal([]byte(r.Get("data").String()), &f.Data)
		ticks = append(ticks, f)
	}
	lrows, err := queryAll(ctx, historyLimitersSQL, since, until)
	if err != nil {
		return History{}, err
	}
	lims := make([]HistoryFact, 0, len(lrows))
	for _, r := range lrows {
		f := HistoryFact{Source: r.Get("source").String()}
		json.Unmarshal([]byte(r.Get("counters").String()), &f.Counters)
		lims = append(lims, f)
	}
	h := BuildHistory(q, ticks, lims)
	historyMu.Lock()
	if len(historyCache) > 64 { // a bound, not an LRU: the dashboard asks few distinct queries
		clear(historyCache)
	}
	historyCache[key] = cachedHistory{at: time.Now(), h: h}
	historyMu.Unlock()
	return h, nil
}

func (Platform) PipelineCounts(ctx context.Context) (map[string]int64, error) {
	rows, err := queryAll(ctx, pipelineCountsSQL)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Get("name").String()] = int64(r.Get("n").Float())
	}
	return out, nil
}

func (p Platform) Reconcile(ctx context.Context) []ledger.Result {
	return ReconcileLedgers(ctx, p, time.Now)
}

func (Platform) ConsumerStats() map[string]int64 { return FactsConsumer.View() }
