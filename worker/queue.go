package worker

import (
	"encoding/json"

	"storecrawl/worker/alerts"
	"storecrawl/worker/ledgerdb"
)

// route is the consumer an EVENTS message goes to.
type route string

// The EVENTS queue's consumers, each the module whose Consumes list the
// kinds it takes.
const (
	routeFacts    route = "ledger"  // a writer's replicated facts (ledgerdb.HandleFacts)
	routeDelivery route = "alerts"  // an alert's delivery (alerts.Service.Deliver)
	routeEvent    route = "markets" // a pipeline event (markets.HandleEvent, then segments)
	// routeUnknown: a kind no module consumes. The consumer logs it as an
	// error and retries it, so past max_retries it is dead-lettered,
	// never dropped.
	routeUnknown route = ""
)

// queueRoutes maps each message kind to its consumer: every kind a
// module's Consumes lists (TestQueueRoutesAreTheModulesKinds).
var queueRoutes = func() map[string]route {
	out := map[string]route{}
	for _, m := range Modules {
		for _, kind := range m.Consumes {
			out[kind] = route(m.Name)
		}
	}
	return out
}()

// routeMessage is the consumer of an EVENTS message body, by its kind.
// A body without a kind (sent before messages carried one, still in
// flight or replayed from the dead letters) is routed by the legacy
// sniffing: a facts batch, else an alert's delivery, else a pipeline
// event (whose consumer refuses an unknown type).
func routeMessage(body string) (r route, kind string, legacy bool) {
	var head struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal([]byte(body), &head) == nil && head.Kind != "" {
		return queueRoutes[head.Kind], head.Kind, false
	}
	switch {
	case ledgerdb.IsFactsMessage(body):
		return routeFacts, "", true
	case alerts.IsDeliveryMessage(body):
		return routeDelivery, "", true
	}
	return routeEvent, "", true
}
