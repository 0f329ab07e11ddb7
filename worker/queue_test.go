package worker

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"storecrawl/durable/ledger"
	"storecrawl/worker/alerts"
	"storecrawl/worker/events"
	"storecrawl/worker/ledgerdb"
	"storecrawl/worker/markets"
)

type sentBodies []string

func (s *sentBodies) Send(_ context.Context, body string) error { *s = append(*s, body); return nil }

// TestQueueRoutesAreTheModulesKinds: each consumer is the module that
// declares its kinds, and no kind is consumed twice.
func TestQueueRoutesAreTheModulesKinds(t *testing.T) {
	if routeFacts != route(ledgerdb.Module.Name) || routeDelivery != route(alerts.Module.Name) || routeEvent != route(markets.Module.Name) {
		t.Fatalf("routes %q %q %q", routeFacts, routeDelivery, routeEvent)
	}
	seen := map[string]string{}
	for _, m := range Modules {
		for _, kind := range m.Consumes {
			if other, dup := seen[kind]; dup {
				t.Errorf("kind %q consumed by %s and %s", kind, other, m.Name)
			}
			seen[kind] = m.Name
		}
	}
	if len(seen) != len(queueRoutes) || len(seen) != 2+len(events.Types) {
		t.Fatalf("kinds %v, routes %v", seen, queueRoutes)
	}
}

// TestEveryMessageCarriesItsKind: the messages the product sends carry a
// kind and are routed by it, to the consumer the legacy sniffing chose.
func TestEveryMessageCarriesItsKind(t *testing.T) {
	var sent sentBodies
	at := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	evs := events.NewAppEnriched([]int64{1, 2}, at)
	evs = append(evs, events.NewKeyed(events.RankingsUpdated, []string{"budget"}, at)...)
	evs = append(evs, events.NewKeyed(events.ClustersReady, []string{"budget"}, at)...)
	evs = append(evs, events.NewKeyed(events.FragmentationDone, []string{"budget"}, at)...)
	if err := events.Send(context.Background(), &sent, evs...); err != nil {
		t.Fatal(err)
	}
	// The facts batch as shim/ledger.mjs builds it.
	shim, err := os.ReadFile("../shim/ledger.mjs")
	if err != nil || !strings.Contains(string(shim), `JSON.stringify({ kind: "facts", type: "facts", source: facts[0].source, facts })`) {
		t.Fatalf("shim/ledger.mjs no longer sends facts as this test reads them: %v", err)
	}
	facts := `{"kind":"facts","type":"facts","source":"scheduler:v1","facts":[]}`
	want := map[string]route{facts: routeFacts, alerts.DeliveryMessage(7): routeDelivery}
	for _, b := range sent {
		want[b] = routeEvent
	}
	if len(want) != 6 {
		t.Fatalf("messages %v", want)
	}
	for body, r := range want {
		got, kind, legacy := routeMessage(body)
		if got != r || kind == "" || legacy {
			t.Errorf("%s: route %q kind %q legacy %v, want %q by kind", body, got, kind, legacy, r)
		}
		// The same message without its kind goes to the same consumer.
		old := strings.Replace(body, `"kind":"`+kind+`",`, "", 1)
		if got, _, legacy := routeMessage(old); got != r || !legacy || old == body {
			t.Errorf("legacy %s: route %q legacy %v, want %q", old, got, legacy, r)
		}
	}
	if ledger.BatchType != "facts" {
		t.Fatalf("the shim sends kind facts, the ledger's batch type is %q", ledger.BatchType)
	}
}

// TestUnknownKindIsNeverRouted: a kind no module consumes has no
// consumer (the consumer fails it, so it is dead-lettered); a body
// without a kind that is nothing known goes to the pipeline's consumer,
// which refuses it likewise.
func TestUnknownKindIsNeverRouted(t *testing.T) {
	for _, body := range []string{`{"kind":"mystery","type":"app-enriched","track_ids":[1]}`, `{"kind":"alert"}`} {
		if r, kind, legacy := routeMessage(body); r != routeUnknown || kind == "" || legacy {
			t.Errorf("%s: route %q kind %q legacy %v", body, r, kind, legacy)
		}
	}
	for _, body := range []string{`nope`, `{"type":"mystery"}`, `{"kind":""}`} {
		if r, _, legacy := routeMessage(body); r != routeEvent || !legacy {
			t.Errorf("%s: route %q legacy %v", body, r, legacy)
		}
		if err := markets.HandleEvent(context.Background(), body, nil, time.Now()); err == nil {
			t.Errorf("%s: the pipeline's consumer took it", body)
		}
	}
}
