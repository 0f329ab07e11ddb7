package history

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"storecrawl/durable/enrichment"
	"storecrawl/durable/ledger"
)

// History window bounds.
const (
	DefaultHistoryWindow = 6 * time.Hour
	// MaxHistoryAge: older facts may be gone from the writers, and a wider
	// window reads more D1 rows than a dashboard view should.
	MaxHistoryAge    = 7 * 24 * time.Hour
	DefaultBucket    = time.Minute
	MinBucket        = time.Minute
	MaxBucket        = time.Hour
	maxTargetNameLen = 64
	// tickKind is the controller fact history buckets.
	tickKind = "controller.tick"
)

// HistoryQuery is a validated /v1/history request.
type HistoryQuery struct {
	Target string
	Since  time.Time
	Until  time.Time
	Bucket time.Duration
}

// Source is the ledger writer the query reads.
func (q HistoryQuery) Source() string { return ledger.SourceControllerPrefix + q.Target }

// ParseHistoryQuery validates target, since (RFC 3339 or unix ms) and
// bucket_s. It returns the offending field on error.
func ParseHistoryQuery(get func(string) string, now time.Time) (HistoryQuery, string, string) {
	q := HistoryQuery{Target: enrichment.DefaultTarget, Until: now, Since: now.Add(-DefaultHistoryWindow), Bucket: DefaultBucket}
	if t := get("target"); t != "" {
		if t != enrichment.DefaultTarget || len(t) > maxTargetNameLen {
			return q, "target", fmt.Sprintf("unknown crawl target %q (have: %s)", t, enrichment.DefaultTarget)
		}
		q.Target = t
	}
	if s := get("since"); s != "" {
		var since time.Time
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			since = time.UnixMilli(ms)
		} else if t, err := time.Parse(time.RFC3339, s); err == nil {
			since = t
		} else {
			return q, "since", "since must be RFC 3339 or unix milliseconds"
		}
		if since.After(now) {
			return q, "since", "since is in the future"
		}
		if now.Sub(since) > MaxHistoryAge {
			return q, "since", fmt.Sprintf("since must be within the last %s", MaxHistoryAge)
		}
		q.Since = since
	}
	if b := get("bucket_s"); b != "" {
		// Bounded as an integer before it becomes a Duration: a huge value
		// would overflow the multiplication and wrap into range.
		n, err := strconv.ParseInt(b, 10, 64)
		lo, hi := int64(MinBucket/time.Second), int64(MaxBucket/time.Second)
		if err != nil || n < lo || n > hi {
			return q, "bucket_s", fmt.Sprintf("bucket_s must be an integer in [%d, %d]", lo, hi)
		}
		q.Bucket = time.Duration(n) * time.Second
	}
	return q, "", ""
}

// HistoryFact is a fact as history reads it from D1.
type HistoryFact struct {
	Source   string
	Kind     string
	At       int64
	Counters map[string]int64
	Data     map[string]any
}

// HistoryPoint is one bucket of a crawl target's history.
type HistoryPoint struct {
	T           int64    `json:"t"`
	Ticks       int64    `json:"ticks"`
	Dispatched  int64    `json:"dispatched"`
	Completed   int64    `json:"completed"`
	Failed      int64    `json:"failed"`
	RateLimited int64    `json:"rate_limited"`
	ItemErrors  int64    `json:"item_errors"`
	SuccessRate *float64 `json:"success_rate"`     // null when nothing was dispatched
	PacePerMin  float64  `json:"pace_per_min"`     // completed items per minute
	CapacityMin *float64 `json:"capacity_per_min"` // the last estimate in the bucket
	Cooldown    bool     `json:"cooldown"`
}

// LimiterSummary is one limiter key over the window.
type LimiterSummary struct {
	Key     string `json:"key"`
	Allowed int64  `json:"allowed"`
	Refused int64  `json:"refused"`
	Waited  int64  `json:"waited"`
}

// History is the /v1/history answer.
type History struct {
	Target           string           `json:"target"`
	Since            int64            `json:"since"`
	Until            int64            `json:"until"`
	BucketS          int64            `json:"bucket_s"`
	Points           []HistoryPoint   `json:"points"`
	Cooldowns        []int64          `json:"cooldowns"`
	ThroughputPerMin float64          `json:"throughput_per_min"`
	ProjectedPerDay  float64          `json:"projected_per_day"`
	Limiters         []LimiterSummary `json:"limiters"`
}

// ThroughputWindow is the recent span the throughput (and its projection
// per day) is measured over.
const ThroughputWindow = 15 * time.Minute

// BuildHistory buckets a target's tick facts (ascending by time) and sums
// the limiters' minute facts.
func BuildHistory(q HistoryQuery, ticks, limiterFacts []HistoryFact) History {
	h := History{Target: q.Target, Since: q.Since.UnixMilli(), Until: q.Until.UnixMilli(), BucketS: int64(q.Bucket / time.Second),
		Points: []HistoryPoint{}, Cooldowns: []int64{}, Limiters: []LimiterSummary{}}
	bucket := q.Bucket.Milliseconds()
	recentFrom := q.Until.Add(-ThroughputWindow).UnixMilli()
	var recent int64
	byT := map[int64]*HistoryPoint{}
	for _, f := range ticks {
		if f.Kind != tickKind {
			continue
		}
		t := f.At / bucket * bucket
		p := byT[t]
		if p == nil {
			h.Points = append(h.Points, HistoryPoint{T: t})
			p = &h.Points[len(h.Points)-1]
			byT = map[int64]*HistoryPoint{t: p} // facts are in time order: only the last bucket grows
		}
		c := f.Counters
		p.Ticks += c["ticks"]
		p.Dispatched += c["dispatched"]
		p.Completed += c["completed"]
		p.Failed += c["failed"]
		p.RateLimited += c["rate_limited"]
		p.ItemErrors += c["item_errors"]
		if v, ok := f.Data["capacity_after"].(float64); ok {
			p.CapacityMin = &v
		}
		if c["cooldowns"] > 0 {
			p.Cooldown = true
			h.Cooldowns = append(h.Cooldowns, f.At)
		}
		if f.At >= recentFrom {
			recent += c["completed"]
		}
	}
	for i := range h.Points {
		p := &h.Points[i]
		if served := p.Dispatched; served > 0 {
			r := round3(float64(served-p.Failed) / float64(served))
			p.SuccessRate = &r
		}
		p.PacePerMin = round3(float64(p.Completed) / (float64(bucket) / 60000))
	}
	span := min(ThroughputWindow, q.Until.Sub(q.Since))
	if span > 0 {
		h.ThroughputPerMin = round3(float64(recent) / span.Minutes())
		h.ProjectedPerDay = float64(int64(h.ThroughputPerMin * 60 * 24))
	}
	byKey := map[string]*LimiterSummary{}
	for _, f := range limiterFacts {
		key := f.Source[len(ledger.SourceLimiterPrefix):]
		s := byKey[key]
		if s == nil {
			s = &LimiterSummary{Key: key}
			byKey[key] = s
		}
		s.Allowed += f.Counters["allowed"]
		s.Refused += f.Counters["refused"]
		s.Waited += f.Counters["waited"]
	}
	for _, s := range byKey {
		h.Limiters = append(h.Limiters, *s)
	}
	sort.Slice(h.Limiters, func(i, j int) bool { return h.Limiters[i].Key < h.Limiters[j].Key })
	return h
}

// round3 rounds to three decimals (rates in JSON).
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
