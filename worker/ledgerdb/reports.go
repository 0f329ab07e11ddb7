package ledgerdb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"storecrawl/durable/ledger"
	"storecrawl/internal/objects"
)

// ObjectCall sends one request to a named Durable Object of a namespace.
type ObjectCall func(ctx context.Context, name, method, path string, body []byte) (status int, respBody []byte, err error)

// ObjectReports is LedgerReports over the writer objects: a source names
// its object (the scheduler singleton, a crawl target's controller, a
// limiter key's object), which answers GET /ledger.
type ObjectReports struct {
	Scheduler     ObjectCall
	SchedulerName string
	Controller    ObjectCall // by crawl target
	Limiter       ObjectCall // by object name: LimiterPrefix + key
	LimiterPrefix string
}

// LedgerReport implements LedgerReports.
func (o ObjectReports) LedgerReport(ctx context.Context, source string) (ledger.Report, error) {
	var status int
	var body []byte
	var err error
	switch {
	case source == objects.SourceScheduler:
		status, body, err = o.Scheduler(ctx, o.SchedulerName, "GET", "/ledger", nil)
	case strings.HasPrefix(source, objects.SourceControllerPrefix):
		status, body, err = o.Controller(ctx, strings.TrimPrefix(source, objects.SourceControllerPrefix), "GET", "/ledger", nil)
	case strings.HasPrefix(source, objects.SourceLimiterPrefix):
		key := strings.TrimPrefix(source, objects.SourceLimiterPrefix)
		q, _ := json.Marshal(map[string]string{"key": key})
		status, body, err = o.Limiter(ctx, o.LimiterPrefix+key, "GET", "/ledger", q)
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

// LedgerRepair implements LedgerRepairs: POST /ledger/repair to the
// writer's object, which answers the ledger.mismatch fact it appended.
func (o ObjectReports) LedgerRepair(ctx context.Context, source string, r ledger.Repair) (ledger.Fact, error) {
	body, _ := json.Marshal(r)
	var status int
	var resp []byte
	var err error
	switch {
	case source == objects.SourceScheduler:
		status, resp, err = o.Scheduler(ctx, o.SchedulerName, "POST", "/ledger/repair", body)
	case strings.HasPrefix(source, objects.SourceControllerPrefix):
		status, resp, err = o.Controller(ctx, strings.TrimPrefix(source, objects.SourceControllerPrefix), "POST", "/ledger/repair", body)
	case strings.HasPrefix(source, objects.SourceLimiterPrefix):
		key := strings.TrimPrefix(source, objects.SourceLimiterPrefix)
		body, _ = json.Marshal(struct {
			Key string `json:"key"`
			ledger.Repair
		}{key, r})
		status, resp, err = o.Limiter(ctx, o.LimiterPrefix+key, "POST", "/ledger/repair", body)
	default:
		return ledger.Fact{}, fmt.Errorf("unknown ledger source %q", source)
	}
	if err != nil {
		return ledger.Fact{}, err
	}
	if status != 200 {
		return ledger.Fact{}, fmt.Errorf("%s /ledger/repair: HTTP %d: %s", source, status, resp)
	}
	var f ledger.Fact
	if err := json.Unmarshal(resp, &f); err != nil {
		return f, fmt.Errorf("%s /ledger/repair: %w", source, err)
	}
	if f.Kind != ledger.KindMismatch || f.Source != source {
		return f, fmt.Errorf("%s /ledger/repair: answered a %q fact of %q", source, f.Kind, f.Source)
	}
	return f, nil
}
