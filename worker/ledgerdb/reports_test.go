package ledgerdb

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestObjectReportsAddressEachWriter(t *testing.T) {
	var asked []string
	call := func(kind string, status int, body string, err error) ObjectCall {
		return func(_ context.Context, name, method, path string, q []byte) (int, []byte, error) {
			asked = append(asked, kind+" "+name+" "+method+" "+path+" "+string(q))
			return status, []byte(body), err
		}
	}
	o := ObjectReports{
		Scheduler: call("scheduler", 200, `{"source":"scheduler","counters":{"runs.x":2}}`, nil), SchedulerName: "v1",
		Controller:    call("controller", 200, `{"source":"controller:main","pending_facts":1}`, nil),
		Limiter:       call("limiter", 500, `boom`, nil),
		LimiterPrefix: "limiter_",
	}
	ctx := context.Background()
	if r, err := o.LedgerReport(ctx, "scheduler:v1"); err != nil || r.Counters["runs.x"] != 2 {
		t.Fatalf("scheduler: %+v %v", r, err)
	}
	if r, err := o.LedgerReport(ctx, "controller:main"); err != nil || r.PendingFacts != 1 {
		t.Fatalf("controller: %+v %v", r, err)
	}
	if _, err := o.LedgerReport(ctx, "limiter:claude"); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("a failing object is an error: %v", err)
	}
	if _, err := o.LedgerReport(ctx, "nobody"); err == nil {
		t.Fatal("an unknown source is an error")
	}
	want := []string{"scheduler v1 GET /ledger ", "controller main GET /ledger ", `limiter limiter_claude GET /ledger {"key":"claude"}`}
	if strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Fatalf("asked %q", asked)
	}
	o.Scheduler = call("scheduler", 0, "", errors.New("unreachable"))
	if _, err := o.LedgerReport(ctx, "scheduler:v1"); err == nil {
		t.Fatal("an unreachable object is an error")
	}
}
