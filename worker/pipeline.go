package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"storecrawl/worker/tasks"
	"strings"
	"time"

	"storecrawl/worker/logx"
)

// Queue event types: each stage announces what it changed; the consumer
// routes each type to the stage that depends on it.
const (
	EventAppEnriched     = "app-enriched"     // → demand scores of those apps
	EventRankingsUpdated = "rankings-updated" // → clustering of those keywords
	EventClustersReady   = "clusters-ready"   // → fragmentation analysis of those clusters
	// EventFragmentationDone → opportunity scores of those clusters.
	EventFragmentationDone = "fragmentation-done"
)

// QueueEvent is a message on the EVENTS queue.
type QueueEvent struct {
	Type     string   `json:"type"`
	TrackIDs []int64  `json:"track_ids,omitempty"`
	Keywords []string `json:"keywords,omitempty"`
	Clusters []string `json:"clusters,omitempty"`
	At       string   `json:"at"`
}

// MaxEventKeys bounds the keywords or clusters of one message.
const MaxEventKeys = 100

// MaxEventTrackIDs bounds one message (and so one consumer statement batch).
const MaxEventTrackIDs = 50

// NewAppEnrichedEvents splits ids into messages of at most MaxEventTrackIDs.
func NewAppEnrichedEvents(ids []int64, at time.Time) []QueueEvent {
	var out []QueueEvent
	for i := 0; i < len(ids); i += MaxEventTrackIDs {
		out = append(out, QueueEvent{Type: EventAppEnriched, TrackIDs: ids[i:min(i+MaxEventTrackIDs, len(ids))], At: at.UTC().Format(time.RFC3339)})
	}
	return out
}

// ScoreInput is what the per-app scores read for one app.
type ScoreInput struct {
	TrackID       int64
	AverageRating float64
	RatingCount   int64
	// CurrentVersionReleaseDate is the last update (RFC 3339; "" = unknown).
	CurrentVersionReleaseDate string
}

// AppScores are the per-app scores the app-enriched stage writes.
type AppScores struct {
	Demand          float64
	Competitiveness float64
}

// Analyzer reads current state and writes derived scores (D1).
type Analyzer interface {
	ScoreInputs(ctx context.Context, ids []int64) ([]ScoreInput, error)
	// SaveAppScores writes demand and competitiveness scores.
	SaveAppScores(ctx context.Context, scores map[int64]AppScores, at time.Time) error
	// ClusterKeywords rebuilds the clusters of these keywords from their
	// current rankings and returns the clusters written.
	ClusterKeywords(ctx context.Context, keywords []string, at time.Time) ([]string, error)
	// AnalyzeFragmentation measures how spread each cluster's demand is
	// across its members, stores it, and returns the clusters analysed.
	AnalyzeFragmentation(ctx context.Context, clusters []string, at time.Time) ([]string, error)
	// ScoreClusters recomputes the opportunity scores of these clusters.
	ScoreClusters(ctx context.Context, clusters []string, at time.Time) error
	// Emit sends a follow-up event.
	Emit(ctx context.Context, ev QueueEvent) error
}

// DemandScore rewards both quality and proven demand: rating × log10(1+ratings).
func DemandScore(avgRating float64, ratingCount int64) float64 {
	if ratingCount < 0 {
		ratingCount = 0
	}
	return math.Round(avgRating*math.Log10(1+float64(ratingCount))*1000) / 1000
}

// Competitiveness weights and bounds: how entrenched an app is, i.e. what a
// newcomer to its market would be up against.
const (
	// proofWeight: social proof, log-scaled ratings; saturates at proofRatings.
	proofWeight  = 0.5
	proofRatings = 1_000_000
	// qualityWeight: the average rating out of 5.
	qualityWeight = 0.3
	// freshnessWeight: an app updated within freshFor is fully maintained;
	// the credit falls linearly to 0 at staleAfter (an abandoned app is
	// easier to beat).
	freshnessWeight = 0.2
	freshFor        = 30 * 24 * time.Hour
	staleAfter      = 365 * 24 * time.Hour
)

// CompetitivenessScore rates, 0–100, how hard an app is to compete with:
// its social proof, its quality and how actively it is maintained.
func CompetitivenessScore(in ScoreInput, now time.Time) float64 {
	proof := math.Min(1, math.Log10(1+float64(max(in.RatingCount, 0)))/math.Log10(1+proofRatings))
	quality := math.Max(0, math.Min(1, in.AverageRating/5))
	fresh := 0.0
	if t, err := time.Parse(time.RFC3339, in.CurrentVersionReleaseDate); err == nil {
		age := now.Sub(t)
		switch {
		case age <= freshFor:
			fresh = 1
		case age < staleAfter:
			fresh = 1 - float64(age-freshFor)/float64(staleAfter-freshFor)
		}
	}
	return math.Round(1000*(proofWeight*proof+qualityWeight*quality+freshnessWeight*fresh)) / 10
}

// ErrBadEvent marks a message that can never be processed; it is retried to
// the dead-letter queue (kept for inspection), never dropped.
var ErrBadEvent = errors.New("bad event")

// HandleEvent processes one queue message body. Handlers read current state
// from D1 and write pure functions of it, so order does not matter and a
// redelivery changes nothing. A returned error means "retry this message".
func HandleEvent(ctx context.Context, body string, a Analyzer, now time.Time) error {
	var ev QueueEvent
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return fmt.Errorf("%w: undecodable: %v", ErrBadEvent, err)
	}
	switch ev.Type {
	case EventAppEnriched:
		if len(ev.TrackIDs) == 0 || len(ev.TrackIDs) > MaxEventTrackIDs {
			return fmt.Errorf("%w: app-enriched needs 1..%d track_ids", ErrBadEvent, MaxEventTrackIDs)
		}
		inputs, err := a.ScoreInputs(ctx, ev.TrackIDs)
		if err != nil {
			return err
		}
		// Enriched apps → competitiveness scoring (and their demand score).
		scores := make(map[int64]AppScores, len(inputs))
		for _, in := range inputs {
			scores[in.TrackID] = AppScores{Demand: DemandScore(in.AverageRating, in.RatingCount), Competitiveness: CompetitivenessScore(in, now)}
		}
		if err := a.SaveAppScores(ctx, scores, now); err != nil {
			return err
		}
		logx.Event("queue.app_enriched_scored", map[string]any{"apps": len(scores)})
		return nil
	case EventRankingsUpdated:
		if len(ev.Keywords) == 0 || len(ev.Keywords) > MaxEventKeys {
			return fmt.Errorf("%w: rankings-updated needs 1..%d keywords", ErrBadEvent, MaxEventKeys)
		}
		clusters, err := a.ClusterKeywords(ctx, ev.Keywords, now)
		if err != nil {
			return err
		}
		logx.Event("queue.clustered", map[string]any{"keywords": len(ev.Keywords), "clusters": len(clusters)})
		if len(clusters) == 0 {
			return nil
		}
		// Redelivery re-sends this: harmless, scoring is idempotent.
		return a.Emit(ctx, QueueEvent{Type: EventClustersReady, Clusters: clusters, At: now.UTC().Format(time.RFC3339)})
	case EventClustersReady:
		if len(ev.Clusters) == 0 || len(ev.Clusters) > MaxEventKeys {
			return fmt.Errorf("%w: clusters-ready needs 1..%d clusters", ErrBadEvent, MaxEventKeys)
		}
		analyzed, err := a.AnalyzeFragmentation(ctx, ev.Clusters, now)
		if err != nil {
			return err
		}
		logx.Event("queue.fragmentation_analyzed", map[string]any{"clusters": len(ev.Clusters), "analyzed": len(analyzed)})
		if len(analyzed) == 0 {
			return nil
		}
		// Redelivery re-sends this: harmless, scoring is idempotent.
		return a.Emit(ctx, QueueEvent{Type: EventFragmentationDone, Clusters: analyzed, At: now.UTC().Format(time.RFC3339)})
	case EventFragmentationDone:
		if len(ev.Clusters) == 0 || len(ev.Clusters) > MaxEventKeys {
			return fmt.Errorf("%w: fragmentation-done needs 1..%d clusters", ErrBadEvent, MaxEventKeys)
		}
		if err := a.ScoreClusters(ctx, ev.Clusters, now); err != nil {
			return err
		}
		logx.Event("queue.opportunities_scored", map[string]any{"clusters": len(ev.Clusters)})
		return nil
	default:
		return fmt.Errorf("%w: unknown type %q", ErrBadEvent, ev.Type)
	}
}

// Cron expressions from wrangler.jsonc.
const (
	CronCrawlCycle = "*/5 * * * *"
	CronClustering = "0 */6 * * *"
	CronDaily      = "0 3 * * *"
)

// CronRun is what one cron invocation did, kept in KV for operators.
type CronRun struct {
	Cron          string             `json:"cron"`
	ScheduledTime string             `json:"scheduled_time"`
	RanAt         string             `json:"ran_at"`
	Result        string             `json:"result"`
	Crawl         *CrawlResult       `json:"crawl,omitempty"`
	Daily         *tasks.DailyResult `json:"daily,omitempty"`
	// D1 is what the run cost in D1, from D1's own result metadata.
	D1    *D1CostView `json:"d1,omitempty"`
	Error string      `json:"error,omitempty"`
}

// CronTasks runs the work of one cron expression.
type CronTasks interface {
	// WakeController touches the EnrichmentController so a broken alarm
	// loop is restarted, and reports whether it is running.
	WakeController(ctx context.Context) (running bool, err error)
	// Crawl runs one discovery cycle.
	Crawl(ctx context.Context) CrawlResult
	// Cluster runs one batch of market clustering and opportunity scoring.
	Cluster(ctx context.Context) (summary string, err error)
	// Daily takes the day's snapshots and runs the data-quality check.
	Daily(ctx context.Context) tasks.DailyResult
}

// RunCron executes the task for expr. It never returns an error to the
// runtime (that would kill the shared Go instance); failures are in the run.
func RunCron(ctx context.Context, expr string, scheduled time.Time, tasks CronTasks, now func() time.Time) CronRun {
	run := CronRun{Cron: expr, ScheduledTime: scheduled.UTC().Format(time.RFC3339)}
	ctx, cost := WithD1Cost(ctx)
	switch expr {
	case CronCrawlCycle:
		// Independent steps, each with its own error handling: one failing
		// cannot sink the other.
		running, err := tasks.WakeController(ctx)
		if err != nil {
			run.Result, run.Error = "controller_wake_failed", err.Error()
		} else {
			run.Result = fmt.Sprintf("controller_awake running=%v", running)
		}
		crawl := tasks.Crawl(ctx) // counted: the controller wake above is a DO call, not D1
		run.Crawl = &crawl
		if crawl.Error != "" {
			run.Error = strings.TrimPrefix(run.Error+"; crawl: "+crawl.Error, "; ")
		}
	case CronClustering:
		summary, err := tasks.Cluster(ctx)
		if err != nil {
			run.Result, run.Error = "clustering_failed", err.Error()
		} else {
			run.Result = "clustered: " + summary
		}
	case CronDaily:
		daily := tasks.Daily(ctx)
		run.Daily = &daily
		run.Result = "daily: " + daily.Summary()
		if daily.Error != "" {
			run.Error = daily.Error
		}
	default:
		run.Result, run.Error = "unknown_cron", "no task for this expression"
	}
	run.RanAt = now().UTC().Format(time.RFC3339Nano)
	d1 := cost.View()
	run.D1 = &d1
	fields := map[string]any{"cron": expr, "result": run.Result, "d1": d1}
	if run.Error != "" {
		fields["level"] = logx.Error
		fields["error"] = run.Error
	}
	logx.Event("cron.run", fields)
	return run
}
