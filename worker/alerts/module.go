package alerts

import (
	"context"
	"time"

	"storecrawl/worker/module"
)

// Module is the alerts' declaration: watches, rules, alerts with their
// deliveries, and the evaluation's cursor.
var Module = module.Module{
	Name: "alerts",
	Doc:  "watchlists and alerts: rank moves, rating drops, new versions, price changes, new competitors, review surges",
	Tables: []module.Table{
		{Name: "alert_watches", Writer: "worker/alerts", Doc: "a watched app, keyword or segment; a keyword's ranks as last evaluated"},
		{Name: "alert_rules", Writer: "worker/alerts", Doc: "a rule: its type, thresholds, webhook and secret, and its storm count this hour"},
		{Name: "alerts", Writer: "worker/alerts", Doc: "an alert, its payload and its delivery attempts"},
		{Name: "alert_cursor", Writer: "worker/alerts", Doc: "the history time the evaluation has read up to"},
	},
	Consumes: []string{DeliveryType},
}

// EvaluateEvery is the alerts-evaluate task's cadence.
const EvaluateEvery = 5 * time.Minute

// Tasks are the alerts' periodic work: alerts-evaluate makes the alerts
// of the changes since its cursor and queues their deliveries.
func Tasks(s *Service) []module.Task {
	return []module.Task{{
		Name: "alerts-evaluate", Every: EvaluateEvery, Jitter: 30 * time.Second,
		Doc: "alerts from the watched apps' and keywords' changes since the cursor, queued for delivery",
		Run: func(ctx context.Context, now func() time.Time) module.Result {
			if s == nil {
				return module.Result{Error: "alerts not wired"}
			}
			rep, err := s.Evaluate(ctx, now())
			if err != nil {
				return module.Failed(err)
			}
			return module.Result{OK: true, Summary: rep.Summary(), Detail: rep.SendErr,
				Counters: map[string]int64{"alerts": int64(rep.Alerts), "suppressed": int64(rep.Suppressed), "sent": int64(rep.Sent + rep.Resent)}}
		},
	}}
}
