package markets

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"storecrawl/worker/events"
	"testing"
	"time"
)

type memAnalyzer struct {
	inputs    map[int64]ScoreInput
	scores    map[int64]float64
	fail      bool
	clustered []string
	analyzed  []string
	scored    []string
	emitted   []events.Event

	competitiveness map[int64]float64
}

func (m *memAnalyzer) ScoreInputs(_ context.Context, ids []int64) ([]ScoreInput, error) {
	if m.fail {
		return nil, errors.New("D1 unavailable")
	}
	var out []ScoreInput
	for _, id := range ids {
		if in, ok := m.inputs[id]; ok {
			out = append(out, in)
		}
	}
	return out, nil
}

func (m *memAnalyzer) ClusterKeywords(_ context.Context, kws []string, _ time.Time) ([]string, error) {
	m.clustered = append(m.clustered, kws...)
	return kws[:1], nil
}

func (m *memAnalyzer) AnalyzeFragmentation(_ context.Context, cs []string, _ time.Time) ([]string, error) {
	if m.fail {
		return nil, errors.New("D1 unavailable")
	}
	m.analyzed = append(m.analyzed, cs...)
	return cs, nil
}

func (m *memAnalyzer) ScoreClusters(_ context.Context, cs []string, _ time.Time) error {
	m.scored = append(m.scored, cs...)
	return nil
}

func (m *memAnalyzer) Emit(_ context.Context, ev events.Event) error {
	m.emitted = append(m.emitted, ev)
	return nil
}

func (m *memAnalyzer) SaveAppScores(_ context.Context, s map[int64]AppScores, _ time.Time) error {
	for k, v := range s {
		m.scores[k] = v.Demand
		if m.competitiveness == nil {
			m.competitiveness = map[int64]float64{}
		}
		m.competitiveness[k] = v.Competitiveness
	}
	return nil
}

func TestHandleEventIsIdempotentAndRejectsBadMessages(t *testing.T) {
	a := &memAnalyzer{inputs: map[int64]ScoreInput{1: {TrackID: 1, AverageRating: 4.5, RatingCount: 999}, 2: {TrackID: 2}}, scores: map[int64]float64{}}
	body := `{"type":"app-enriched","track_ids":[1,2,3]}`
	for i := 0; i < 2; i++ { // redelivery changes nothing
		if err := HandleEvent(context.Background(), body, a, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if a.scores[1] != 13.5 || a.scores[2] != 0 || len(a.scores) != 2 {
		t.Fatalf("scores %v", a.scores)
	}
	if c := a.competitiveness; len(c) != 2 || c[1] <= c[2] || c[2] != 0 {
		t.Fatalf("competitiveness %v", c)
	}
	for _, bad := range []string{`nope`, `{"type":"mystery"}`, `{"type":"app-enriched"}`} {
		if err := HandleEvent(context.Background(), bad, a, time.Now()); !errors.Is(err, ErrBadEvent) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	a.fail = true
	if err := HandleEvent(context.Background(), body, a, time.Now()); err == nil || errors.Is(err, ErrBadEvent) {
		t.Fatalf("a transient failure must ask for a retry: %v", err)
	}
}

func TestEventsRouteToTheirStages(t *testing.T) {
	a := &memAnalyzer{scores: map[int64]float64{}}
	if err := HandleEvent(context.Background(), `{"type":"rankings-updated","keywords":["budget","chat"]}`, a, time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(a.clustered) != 2 || len(a.emitted) != 1 || a.emitted[0].Type != events.ClustersReady || a.emitted[0].Clusters[0] != "budget" {
		t.Fatalf("rankings-updated: %+v", a)
	}
	// clusters-ready → fragmentation analysis → fragmentation-done, not scores yet.
	b, _ := json.Marshal(a.emitted[0])
	if err := HandleEvent(context.Background(), string(b), a, time.Now()); err != nil || len(a.analyzed) != 1 || len(a.scored) != 0 ||
		len(a.emitted) != 2 || a.emitted[1].Type != events.FragmentationDone || a.emitted[1].Clusters[0] != "budget" {
		t.Fatalf("clusters-ready: %v %+v", err, a)
	}
	// fragmentation-done → opportunity scores; a redelivery scores again, nothing else.
	b, _ = json.Marshal(a.emitted[1])
	for i := 0; i < 2; i++ {
		if err := HandleEvent(context.Background(), string(b), a, time.Now()); err != nil || len(a.scored) != i+1 || len(a.emitted) != 2 {
			t.Fatalf("fragmentation-done: %v %+v", err, a)
		}
	}
	a.fail = true
	if err := HandleEvent(context.Background(), `{"type":"clusters-ready","clusters":["x"]}`, a, time.Now()); err == nil || errors.Is(err, ErrBadEvent) || len(a.emitted) != 2 {
		t.Fatalf("a failed analysis must retry and announce nothing: %v", err)
	}
	for _, bad := range []string{`{"type":"rankings-updated"}`, `{"type":"clusters-ready","clusters":[]}`, `{"type":"fragmentation-done"}`} {
		if err := HandleEvent(context.Background(), bad, a, time.Now()); !errors.Is(err, ErrBadEvent) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestCompetitivenessScore(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	day := func(d int) string { return now.Add(-time.Duration(d) * 24 * time.Hour).Format(time.RFC3339) }
	giant := ScoreInput{AverageRating: 5, RatingCount: 5_000_000, CurrentVersionReleaseDate: day(3)}
	if got := CompetitivenessScore(giant, now); got != 100 {
		t.Fatalf("a maintained 5-star app with millions of ratings: %v, want 100", got)
	}
	if got := CompetitivenessScore(ScoreInput{}, now); got != 0 {
		t.Fatalf("nothing known: %v, want 0", got)
	}
	// Freshness decays linearly from 30 to 365 days, then counts nothing.
	fresh := CompetitivenessScore(ScoreInput{AverageRating: 4, RatingCount: 1000, CurrentVersionReleaseDate: day(10)}, now)
	mid := CompetitivenessScore(ScoreInput{AverageRating: 4, RatingCount: 1000, CurrentVersionReleaseDate: day(197)}, now)
	stale := CompetitivenessScore(ScoreInput{AverageRating: 4, RatingCount: 1000, CurrentVersionReleaseDate: day(400)}, now)
	unknown := CompetitivenessScore(ScoreInput{AverageRating: 4, RatingCount: 1000}, now)
	if !(fresh > mid && mid > stale) || stale != unknown || fresh-stale != 20 || math.Abs(mid-stale-10) > 0.11 {
		t.Fatalf("freshness: fresh %v mid %v stale %v unknown %v", fresh, mid, stale, unknown)
	}
	// More ratings, more entrenched; bad data cannot leave 0–100.
	if CompetitivenessScore(ScoreInput{AverageRating: 4, RatingCount: 10}, now) >= CompetitivenessScore(ScoreInput{AverageRating: 4, RatingCount: 10000}, now) {
		t.Fatal("ratings must raise the score")
	}
	if got := CompetitivenessScore(ScoreInput{AverageRating: 9, RatingCount: -5}, now); got < 0 || got > 100 {
		t.Fatalf("out of range: %v", got)
	}
}

func TestMeanCompetitiveness(t *testing.T) {
	a, b := 71.4, 58.2
	if m, n := MeanCompetitiveness([]*float64{&a, nil, &b}); m == nil || *m != 64.8 || n != 2 {
		t.Errorf("mean %v of %d", m, n)
	}
	// None scored (no member enriched yet): unknown, not 0.
	if m, n := MeanCompetitiveness([]*float64{nil, nil}); m != nil || n != 0 {
		t.Errorf("unscored: %v of %d", m, n)
	}
}
