package markets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"storecrawl/worker/events"
	"storecrawl/worker/logx"
)

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
	Emit(ctx context.Context, ev events.Event) error
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

// MeanCompetitiveness is a set of apps' competitiveness, 0–100: the mean
// of the scored ones (CompetitivenessScore, written once an app is
// enriched) and how many were scored. nil when none is: unknown, which is
// not the same as 0 (easy to beat).
func MeanCompetitiveness(scores []*float64) (*float64, int) {
	var sum float64
	n := 0
	for _, s := range scores {
		if s != nil {
			sum += *s
			n++
		}
	}
	if n == 0 {
		return nil, 0
	}
	m := math.Round(10*sum/float64(n)) / 10
	return &m, n
}

// ErrBadEvent marks a message that can never be processed; it is retried to
// the dead-letter queue (kept for inspection), never dropped.
var ErrBadEvent = errors.New("bad event")

// HandleEvent processes one queue message body. Handlers read current state
// from D1 and write pure functions of it, so order does not matter and a
// redelivery changes nothing. A returned error means "retry this message".
func HandleEvent(ctx context.Context, body string, a Analyzer, now time.Time) error {
	var ev events.Event
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		return fmt.Errorf("%w: undecodable: %v", ErrBadEvent, err)
	}
	switch ev.Type {
	case events.AppEnriched:
		if len(ev.TrackIDs) == 0 || len(ev.TrackIDs) > events.MaxTrackIDs {
			return fmt.Errorf("%w: app-enriched needs 1..%d track_ids", ErrBadEvent, events.MaxTrackIDs)
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
	case events.RankingsUpdated:
		if len(ev.Keywords) == 0 || len(ev.Keywords) > events.MaxKeys {
			return fmt.Errorf("%w: rankings-updated needs 1..%d keywords", ErrBadEvent, events.MaxKeys)
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
		return a.Emit(ctx, events.Event{Type: events.ClustersReady, Clusters: clusters, At: now.UTC().Format(time.RFC3339)})
	case events.ClustersReady:
		if len(ev.Clusters) == 0 || len(ev.Clusters) > events.MaxKeys {
			return fmt.Errorf("%w: clusters-ready needs 1..%d clusters", ErrBadEvent, events.MaxKeys)
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
		return a.Emit(ctx, events.Event{Type: events.FragmentationDone, Clusters: analyzed, At: now.UTC().Format(time.RFC3339)})
	case events.FragmentationDone:
		if len(ev.Clusters) == 0 || len(ev.Clusters) > events.MaxKeys {
			return fmt.Errorf("%w: fragmentation-done needs 1..%d clusters", ErrBadEvent, events.MaxKeys)
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
